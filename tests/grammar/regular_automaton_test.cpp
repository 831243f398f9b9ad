// Regexes as deterministic automata: minimal sizes known from the literature, parts the
// automaton does not take, and the matcher's cost per byte on ambiguous loops staying flat as
// the text grows (regex_test.cpp compares their answers with PCRE2).
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
