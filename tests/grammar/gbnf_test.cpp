// GBNF front end: grammars in llama.cpp's syntax (comments, multi-line rules, classes,
// escapes, counted repetition), and syntax errors reported with their line.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"

namespace kite::grammar {
namespace {

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& text) {
    Matcher m(g);
    return m.advance(text) && m.can_stop();
}

// Feeds "<", four words of 5,000 letters and ">"; the seconds it took (a failure where the
// grammar refuses the text).
double seconds_to_match_long_words(const std::shared_ptr<const Grammar>& g) {
    Matcher m(g);
    const auto start = std::chrono::steady_clock::now();
    bool ok = m.advance("<");
    for (int i = 0; ok && i < 20'000; ++i) ok = m.advance(i % 5000 == 4999 ? " " : "a");
    EXPECT_TRUE(ok && m.advance(">") && m.can_stop());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(GrammarGbnf, ArithmeticWithCommentsAndMultilineRules) {
    const auto g = compile_gbnf(
        "# sums of products of numbers or parenthesised expressions\n"
        "root ::= expr\n"
        "expr ::= term ((\"+\" | \"-\") term)*\n"
        "term ::= factor\n"
        "         (\"*\" factor)*   # continues on the next line\n"
        "factor ::= [0-9]+ | \"(\" expr \")\"\n");
    for (const char* ok : {"1", "1+2*3", "(1+2)*3-40", "((7))"}) EXPECT_TRUE(accepts(g, ok)) << ok;
    for (const char* bad : {"", "1+", "(1", "1**2", "a"}) EXPECT_FALSE(accepts(g, bad)) << bad;
}

TEST(GrammarGbnf, ClassesEscapesAndRepetition) {
    const auto g = compile_gbnf(
        "root ::= [^\"\\n]{2,3} \"\\x41\\u00e9\" code?\n"
        "code ::= [a-fA-F0-9]{4} | .\n");
    EXPECT_TRUE(accepts(g, "xyAé"));
    EXPECT_TRUE(accepts(g, "xyzAébeef"));
    EXPECT_TRUE(accepts(g, "xyzAé€"));
    EXPECT_FALSE(accepts(g, "xAé"));
    EXPECT_FALSE(accepts(g, "x\nyAé"));
    EXPECT_FALSE(accepts(g, "xyzAébee"));
}

TEST(GrammarGbnf, RulesOfCharactersAloneCostTheSameAtEveryLength) {
    // words has no reference to another rule: it is built as its automaton, so its ambiguous
    // loop (a letter may end a word or not) holds a fixed number of matcher items. Lowered as
    // written, words of 5,000 letters did not finish in 60 s.
    const auto g = compile_gbnf(
        "root ::= \"<\" words \">\"\n"
        "words ::= ([a-z]+ \" \"?)+\n");
    EXPECT_LT(seconds_to_match_long_words(g), 5.0);
    for (const char* ok : {"<a>", "<ab cd >", "<a b>"}) EXPECT_TRUE(accepts(g, ok)) << ok;
    for (const char* bad : {"<>", "< a>", "<a  b>", "<A>"}) EXPECT_FALSE(accepts(g, bad)) << bad;
}

TEST(GrammarGbnf, RulesWhoseReferencesEndCostTheSameAtEveryLength) {
    // root refers to word and sep, which refer to nothing: written out in place, root is one
    // regular expression built as its automaton. Lowered as written, a byte at 3,000 letters
    // of one word took 222 ms, and these 20,000 bytes did not finish in 60 s.
    const auto g = compile_gbnf(
        "root ::= \"<\" (word sep?)+ \">\"\n"
        "word ::= letter+\n"
        "letter ::= [a-z]\n"
        "sep ::= \" \" | \", \"\n");
    EXPECT_LT(seconds_to_match_long_words(g), 5.0);
    for (const char* ok : {"<a>", "<ab, cd >", "<a b, c>"}) EXPECT_TRUE(accepts(g, ok)) << ok;
    for (const char* bad : {"<>", "< a>", "<a  b>", "<a,b>", "<A>"})
        EXPECT_FALSE(accepts(g, bad)) << bad;
}

TEST(GrammarGbnf, CyclesLongChainsAndRedefinitionsStayAsWritten) {
    // Rules on a cycle cannot be written out; the rules around them still can.
    const auto nested = compile_gbnf(
        "root ::= list\n"
        "list ::= \"[\" (item (\",\" item)*)? \"]\"\n"
        "item ::= list | (word \" \"?)+\n"
        "word ::= [a-z]+\n");
    for (const char* ok : {"[]", "[a b,[c],[[d e ]]]", "[ab]"})
        EXPECT_TRUE(accepts(nested, ok)) << ok;
    for (const char* bad : {"[", "[a,]", "[[a]"}) EXPECT_FALSE(accepts(nested, bad)) << bad;

    // A chain of 20,000 rules: measured without recursion, too deep to write out.
    std::string chain = "root ::= r0\n";
    for (int i = 0; i < 20'000; ++i) chain += fmt::format("r{} ::= \"x\" r{}?\n", i, i + 1);
    chain += "r20000 ::= \"y\"\n";
    const auto long_chain = compile_gbnf(chain);
    EXPECT_TRUE(accepts(long_chain, "xxx"));
    EXPECT_FALSE(accepts(long_chain, "y"));

    // A rule defined twice has both bodies as alternatives, written out or not.
    const auto twice = compile_gbnf(
        "root ::= (w \" \"?)+\n"
        "w ::= [a-c]+\n"
        "w ::= \"z\"\n");
    for (const char* ok : {"abc", "z z", "ab zc"}) EXPECT_TRUE(accepts(twice, ok)) << ok;
    EXPECT_FALSE(accepts(twice, "d"));
}

TEST(GrammarGbnf, SyntaxErrorsNameTheLine) {
    const auto error_of = [](const char* text) {
        try {
            compile_gbnf(text);
        } catch (const GrammarError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(error_of("root ::= \"a\"\nx ::= (\"b\"").find("line 2"), std::string::npos);
    EXPECT_NE(error_of("start ::= \"a\"").find("root"), std::string::npos);
    EXPECT_NE(error_of("root ::= missing").find("missing"), std::string::npos);
    EXPECT_NE(error_of("root ::= [z-a]").find("range"), std::string::npos);
    EXPECT_NE(error_of("root ::= root \"a\"").find("empty"), std::string::npos);
    EXPECT_FALSE(error_of("root = \"a\"").empty());
}

}  // namespace
}  // namespace kite::grammar
