// Regexes as deterministic automata: minimal sizes known from the literature, parts the
// automaton does not take, search-mode answers compared with PCRE2, and the matcher's cost per
// byte on ambiguous loops staying flat as the text grows.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/regex.h"
#include "grammar/regular_automaton.h"

namespace kite::grammar {
namespace {

size_t states(const std::string& pattern) {
    const std::optional<ByteAutomaton> a =
        regular_automaton(regex_to_expr(pattern, RegexMatch::Full), 512);
    return a ? a->states() : 0;
}

TEST(RegularAutomaton, IsMinimal) {
    // The Dragon Book's example (Aho, Sethi, Ullman, section 3.9): (a|b)*abb needs 4 states.
    EXPECT_EQ(states("(a|b)*abb"), 4u);
    EXPECT_EQ(states("[0-9]+"), 2u);
    EXPECT_EQ(states("(?:[0-9]|[0-4])+|\\d+"), 2u);  // alternatives of the same language
    EXPECT_EQ(states("([a-z]+ ?)+"), 3u);            // start, after a letter, after a space
    // A two-byte class needs a state between its bytes: start, after the lead byte, accepting.
    EXPECT_EQ(states("[é-ü]"), 3u);
}

TEST(RegularAutomaton, LeavesOtherPartsToTheGrammar) {
    EXPECT_FALSE(regular_automaton(ref("x"), 512));  // a rule: not regular here
    EXPECT_FALSE(regular_automaton(alt({}), 512));   // matches nothing
    EXPECT_FALSE(regular_automaton(regex_to_expr("[a-z]{1,600}", RegexMatch::Full), 512));
    // The last 20 letters' choices make 2^20 states; given up on quickly.
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(regular_automaton(regex_to_expr("(a|b)*a(a|b){20}", RegexMatch::Full), 512));
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
}

bool grammar_search(const std::string& pattern, const std::string& text) {
    GrammarBuilder b;
    b.define("root", regular(regex_to_expr(pattern, RegexMatch::Search)));
    Matcher m(b.build("root"));
    return m.advance(text) && m.can_stop();
}

bool pcre2_search(const std::string& pattern, const std::string& text) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF, &error, &offset, nullptr);
    EXPECT_NE(code, nullptr) << pattern;
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
    const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0, 0,
                               md, nullptr);
    pcre2_match_data_free(md);
    pcre2_code_free(code);
    return rc >= 0;
}

TEST(RegularAutomaton, SearchAgreesWithPcre2) {
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
            EXPECT_EQ(grammar_search(p, t), pcre2_search(p, t)) << p << " on '" << t << "'";
}

// Seconds to feed `text` one byte at a time.
double feed_seconds(Matcher& m, const std::string& text) {
    const auto start = std::chrono::steady_clock::now();
    for (const char c : text) EXPECT_TRUE(m.advance(std::string(1, c)));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(RegularAutomaton, AmbiguousLoopsCostTheSameAtEveryLength) {
    // Lowered as written, (\w+\s?)+ held one item per place a word could have begun: the 3,000th
    // byte took 135 ms, and 20,000 bytes would have taken hours. Measured now: milliseconds.
    GrammarBuilder b;
    b.define("root", regular(regex_to_expr("(\\w+\\s?)+", RegexMatch::Full)));
    Matcher m(b.build("root"));
    EXPECT_LT(feed_seconds(m, std::string(20'000, 'a')), 5.0);
    EXPECT_TRUE(m.can_stop());

    // The same inside a JSON string (characters escaped), where a searched pattern is wrapped
    // in .* on both sides.
    Matcher j(compile_json_schema(
        nlohmann::ordered_json::parse(R"({"type":"string","pattern":"([a-z]+ ?)+"})")));
    std::string words = "\"";
    for (int i = 0; i < 2'000; ++i) words += i % 7 == 6 ? "b \\\"" : "ab";
    EXPECT_LT(feed_seconds(j, words + "\""), 5.0);
    EXPECT_TRUE(j.can_stop());
}

}  // namespace
}  // namespace kite::grammar
