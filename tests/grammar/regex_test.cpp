// Regex front end: full-match answers compared with PCRE2 (an independent engine, ASCII \d \w
// as this compiler reads them), and unsupported constructs refused.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/regex.h"

namespace kite::grammar {
namespace {

// As written, or as its automaton (regular()): both must give PCRE2's answer.
bool grammar_full_match(const std::string& pattern, const std::string& text, bool automaton) {
    GrammarBuilder b;
    const Expr e = regex_to_expr(pattern, RegexMatch::Full);
    b.define("root", automaton ? regular(e) : e);
    Matcher m(b.build("root"));
    return m.advance(text) && m.can_stop();
}

// PCRE2's answer: the whole text (`full`) or some part of it matches.
bool pcre2_matches(const std::string& pattern, const std::string& text, bool full) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    const uint32_t anchors = full ? PCRE2_ANCHORED | PCRE2_ENDANCHORED : 0;
    pcre2_code* code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                      PCRE2_UTF | PCRE2_ALT_BSUX | anchors, &error, &offset, nullptr);
    EXPECT_NE(code, nullptr) << pattern;
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
    const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0, 0,
                               md, nullptr);
    pcre2_match_data_free(md);
    pcre2_code_free(code);
    return rc >= 0;
}

TEST(GrammarRegex, AgreesWithPcre2) {
    const std::vector<std::string> patterns = {
        "[a-z]+", "a|bc|", "(ab)*c?", "\\d{3}-\\d{2,4}", "[^0-9\\s]+", "x{2,}", "(?:a|b){1,3}$",
        "^[A-Z][a-z]*( [A-Z][a-z]*)*$", "\\w+@\\w+\\.com", "[\\-.]+", "a.c", "\\.\\*\\\\", "[é-ü]+",
        "colou?r", "\\x41\\u00e9", "[]a]+",
        // Loops of loops (built flat: NestedLoopsAreBuiltFlat), the same language.
        "(?:a+|b)+c", "(a*|bc)+", "(?:\\d{1,3})+", "(x?)+a", "(a|)+b", "(a{2,3}|b)+",
        // Ambiguous loops of sequences, which only the automaton runs in constant work a byte.
        "(\\w+\\s?)+", "([a-z]+ ?)*c", "(a|ab)*(b|ba)*"};
    const std::vector<std::string> texts = {
        "",     "a",  "abc",   "bc",          "ababc", "123-45",      "123-456789", "xx",   "xxxxx",
        "x",    "ab", "aba",   "Hello World", "hello", "me@site.com", "-.-",        "a\nc", "axc",
        ".*\\", "éü", "color", "colour",      "Aé",    "]a]",         "a{,3}",      "  ",   "a1"};
    for (const std::string& p : patterns)
        for (const std::string& t : texts)
            for (const bool automaton : {false, true})
                EXPECT_EQ(grammar_full_match(p, t, automaton), pcre2_matches(p, t, true))
                    << p << " on '" << t << "'" << (automaton ? " (automaton)" : "");
}

bool grammar_search(const std::string& pattern, const std::string& text) {
    GrammarBuilder b;
    b.define("root", regular(regex_to_expr(pattern, RegexMatch::Search)));
    Matcher m(b.build("root"));
    return m.advance(text) && m.can_stop();
}

// Search mode (a schema's `pattern`), as the automaton the pattern of a request is built as.
TEST(GrammarRegex, SearchAgreesWithPcre2) {
    const std::vector<std::string> patterns = {"ab+",         "^ab",
                                               "b$",          "^(\\w+\\s?)+$",
                                               "([a-z]+ ?)+", "(a|ab)*(b|ba)*c",
                                               "^$",          "é+",
                                               "x{2,3}y",     "^[A-Z][a-z]*( [A-Z][a-z]*)*$",
                                               "(a|b)*abb",   "a|^b|c$"};
    const std::vector<std::string> texts = {
        "",     "a",   "ab",      "xxabbby",   "ba",  "b",    "Hello World", "hello world ",
        "a  b", "abb", "aabab c", "ababbabbx", "xxy", "xxxy", "é",           "aé",
        "abbé", "cb",  "bc",      "xc"};
    for (const std::string& p : patterns)
        for (const std::string& t : texts)
            EXPECT_EQ(grammar_search(p, t), pcre2_matches(p, t, false)) << p << " on '" << t << "'";
}

TEST(GrammarRegex, NestedLoopsAreBuiltFlat) {
    // (a+|b)+ splits a run of a's into passes in every way; the matcher's open items then grew
    // with every byte (a fuzzer input took minutes). The loop over the bodies, (a|b)+, is the
    // same language: the nested form is built as it.
    const Expr e = regex_to_expr("(?:a+|b{1,3}|c*)+", RegexMatch::Full);
    ASSERT_EQ(e.kind, Expr::Kind::Repeat);
    EXPECT_EQ(e.min, 0u);  // c* lets a pass match nothing
    ASSERT_EQ(e.items[0].kind, Expr::Kind::Alt);
    for (const Expr& body : e.items[0].items) EXPECT_EQ(body.kind, Expr::Kind::Class);
    EXPECT_EQ(regex_to_expr("(?:x{2,3})+", RegexMatch::Full).items[0].kind, Expr::Kind::Repeat);
}

TEST(GrammarRegex, SearchFindsTheMatchAnywhere) {
    GrammarBuilder b;
    b.define("root", regex_to_expr("ab+", RegexMatch::Search));
    Matcher m(b.build("root"));
    EXPECT_TRUE(m.advance("xxabbby") && m.can_stop());
    GrammarBuilder c;
    c.define("root", regex_to_expr("^ab$", RegexMatch::Search));
    Matcher n(c.build("root"));
    EXPECT_FALSE(n.advance("xab"));
}

TEST(GrammarRegex, UnsupportedConstructsAreErrors) {
    for (const char* p : {"(?=a)", "(a)\\1", "\\bword", "\\p{L}", "a**+", "(a", "a)", "[a", "*a",
                          "[z-a]", "a^b", "(?i)a", "a{,3}"})
        EXPECT_THROW(regex_to_expr(p, RegexMatch::Full), GrammarError) << p;
}

}  // namespace
}  // namespace kite::grammar
