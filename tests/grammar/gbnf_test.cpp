// GBNF front end: grammars in llama.cpp's syntax (comments, multi-line rules, classes,
// escapes, counted repetition), and syntax errors reported with their line.
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
    Matcher m(g);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(m.advance("<"));
    for (int i = 0; i < 20'000; ++i) ASSERT_TRUE(m.advance(i % 5000 == 4999 ? " " : "a"));
    ASSERT_TRUE(m.advance(">"));
    EXPECT_TRUE(m.can_stop());
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
    for (const char* ok : {"<a>", "<ab cd >", "<a b>"}) EXPECT_TRUE(accepts(g, ok)) << ok;
    for (const char* bad : {"<>", "< a>", "<a  b>", "<A>"}) EXPECT_FALSE(accepts(g, bad)) << bad;
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
