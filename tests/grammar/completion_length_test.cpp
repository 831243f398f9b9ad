// The shortest completion (Matcher::completion_length, keep_shortest) against its definition:
// a breadth-first search over the bytes a grammar uses for the shortest string after which
// the matcher may stop, and every token of a small vocabulary fed on its own.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/token_trie.h"

namespace kite::grammar {
namespace {

// The length of the shortest string over `alphabet` that completes `prefix`, searched byte
// by byte (dead prefixes dropped), up to `limit` bytes; -1 when there is none that short.
int brute_force_completion(const std::shared_ptr<const Grammar>& g, const std::string& prefix,
                           const std::string& alphabet, int limit) {
    std::vector<std::string> level = {""};
    for (int n = 0; n <= limit; ++n) {
        std::vector<std::string> next;
        for (const std::string& tail : level) {
            Matcher m(g);
            if (!m.advance(prefix + tail)) continue;
            if (m.can_stop()) return n;
            for (char c : alphabet)
                if (m.accepts(std::string(1, c))) next.push_back(tail + c);
        }
        level = std::move(next);
    }
    return -1;
}

uint64_t completion(const std::shared_ptr<const Grammar>& g, const std::string& prefix) {
    Matcher m(g);
    EXPECT_TRUE(m.advance(prefix)) << prefix;
    return m.completion_length();
}

struct Case {
    const char* gbnf;
    const char* alphabet;
    std::vector<std::string> prefixes;
};

TEST(CompletionLength, MatchesTheShortestStringSearch) {
    const std::vector<Case> cases = {
        {R"(root ::= "[" (root ("," root)*)? "]" | [0-9]+)",
         "[],0",
         {"", "[", "[1,", "[[[", "[1,[2", "[[],[[", "7"}},
        // Left recursion, nullable rules and alternatives of different lengths.
        {R"(root ::= list "b" nothing
            list ::= list "a" | nothing
            nothing ::= "" | nothing nothing)",
         "ab",
         {"", "a", "aaa", "aab"}},
        {R"(root ::= "x" ("yy" | "z" "w"? ) "!" | "q"{3,5})",
         "xyzw!q",
         {"", "x", "xy", "xz", "q", "qq"}},
        // A counted repetition and a keyword that shares a prefix with a longer one.
        {R"(root ::= ("true" | "tru" "ee") (" " root)?)", "true ", {"", "t", "tr", "tru", "true "}},
    };
    for (const Case& c : cases) {
        const auto g = compile_gbnf(c.gbnf);
        for (const std::string& prefix : c.prefixes) {
            const int expected = brute_force_completion(g, prefix, c.alphabet, 9);
            ASSERT_GE(expected, 0) << c.gbnf << " after '" << prefix << "'";
            EXPECT_EQ(completion(g, prefix), static_cast<uint64_t>(expected))
                << c.gbnf << " after '" << prefix << "'";
        }
    }
}

TEST(CompletionLength, JsonSchemaClosesStringsAndRequiredProperties) {
    const auto g = compile_json_schema(nlohmann::ordered_json::parse(
        R"({"type":"object","properties":{"a":{"type":"string"},"n":{"type":"integer"}},
            "required":["a","n"],"additionalProperties":false})"));
    EXPECT_EQ(completion(g, ""), std::string(R"({"a":"","n":0})").size());
    EXPECT_EQ(completion(g, R"({"a":"a long story)"), std::string(R"(","n":0})").size());
    EXPECT_EQ(completion(g, R"({"a":"","n":12)"), 1u);
    EXPECT_EQ(completion(g, R"({"a":"","n":12})"), 0u);
}

// A right-recursive list nests one level per item: thousands of items must not overflow
// anything, and the answer stays exact.
TEST(CompletionLength, LongListsStayExact) {
    const auto g = compile_gbnf(R"(root ::= "[" item ("," item)* "]"
                                   item ::= "ab" | "c")");
    std::string text = "[c";
    for (int i = 0; i < 5000; ++i) text += ",ab";
    Matcher m(g);
    ASSERT_TRUE(m.advance(text));
    EXPECT_EQ(m.completion_length(), 1u);
    ASSERT_TRUE(m.advance(",a"));
    EXPECT_EQ(m.completion_length(), 2u);
    m.rollback(1);
    EXPECT_EQ(m.completion_length(), 1u);
}

std::vector<std::string> small_vocab() {
    const std::string bytes = "[],0a\"";
    std::vector<std::string> out;
    for (char x : bytes) {
        out.emplace_back(1, x);
        for (char y : bytes) out.push_back(std::string{x, y});
    }
    return out;
}

TEST(CompletionLength, KeepShortestKeepsExactlyTheTokensThatShortenByTheirLength) {
    const auto g = compile_gbnf(R"(root ::= "[" (root ("," root)*)? "]" | [0-9]+)");
    const std::vector<std::string> vocab = small_vocab();
    const int32_t stop = static_cast<int32_t>(vocab.size());
    std::vector<std::string> with_stop = vocab;
    with_stop.emplace_back();
    const TokenTrie trie(with_stop, {stop});
    for (const std::string prefix : {"", "[", "[[0,", "[0", "[[[]", "0"}) {
        Matcher m(g);
        ASSERT_TRUE(m.advance(prefix));
        const uint64_t now = m.completion_length();
        std::vector<uint64_t> mask;
        m.allowed_tokens(trie, mask);
        const std::vector<uint64_t> allowed = mask;
        m.keep_shortest(trie, mask);
        size_t kept = 0;
        for (size_t t = 0; t < vocab.size(); ++t) {
            const bool in = (mask[t >> 6] >> (t & 63)) & 1;
            kept += in;
            Matcher after(g);
            const bool shortens = after.advance(prefix + vocab[t]) &&
                                  after.completion_length() + vocab[t].size() == now;
            EXPECT_EQ(in, shortens) << "after '" << prefix << "', token '" << vocab[t] << "'";
            if (in) {
                EXPECT_TRUE((allowed[t >> 6] >> (t & 63)) & 1);
            }
        }
        // closing_token: the longest kept token (the lowest id among equals), -1 at the end.
        int32_t longest = -1;
        for (size_t t = 0; t < vocab.size(); ++t)
            if ((mask[t >> 6] >> (t & 63)) & 1 &&
                (longest < 0 || vocab[t].size() > vocab[longest].size()))
                longest = static_cast<int32_t>(t);
        EXPECT_EQ(m.closing_token(trie), longest) << "after '" << prefix << "'";
        const bool stop_kept = (mask[stop >> 6] >> (stop & 63)) & 1;
        EXPECT_EQ(stop_kept, now == 0) << prefix;
        EXPECT_GT(kept + stop_kept, 0u) << "nothing left after '" << prefix << "'";
    }
}

// closing_tokens counts the tokens of following closing_token to the end, memoised or not,
// and never more than the bytes (single bytes are in the vocabulary).
TEST(CompletionLength, ClosingTokensCountTheClosingPath) {
    const auto g = compile_json_schema(nlohmann::ordered_json::parse(
        R"({"type":"object","properties":{"a":{"type":"string"},"list":{"type":"array",
            "items":{"type":"integer"},"minItems":3}},"required":["a","list"]})"));
    std::vector<std::string> vocab;
    for (const char* t : {"{", "}", "[", "]", ",", ":", "\"", "a", "0", "1", "list", "\":", "\",\"",
                          "0,", "{\"", "\"}", "]}", "x"})
        vocab.emplace_back(t);
    const TokenTrie trie(vocab, {});
    ClosingCache cache;
    for (const std::string prefix :
         {"", "{", "{\"a\":\"xx", "{\"a\":\"\",\"list\":[1", "{\"a\":\"\",\"list\":[1,0,1,"}) {
        Matcher m(g);
        ASSERT_TRUE(m.advance(prefix)) << prefix;
        // Follow the closing tokens by hand.
        Matcher walk(g);
        ASSERT_TRUE(walk.advance(prefix));
        uint64_t steps = 0;
        std::string closed = prefix;
        while (walk.completion_length() > 0) {
            const int32_t t = walk.closing_token(trie);
            ASSERT_GE(t, 0) << closed;
            ASSERT_TRUE(walk.advance(vocab[t]));
            closed += vocab[t];
            ++steps;
        }
        EXPECT_TRUE(walk.can_stop()) << closed;
        EXPECT_EQ(closed.size() - prefix.size(), m.completion_length()) << closed;
        EXPECT_LE(steps, m.completion_length());
        EXPECT_EQ(m.closing_tokens(trie, vocab, cache, 1000), steps) << closed;
        EXPECT_EQ(m.closing_tokens(trie, vocab, cache, 1000), steps) << "memoised: " << closed;
        ClosingCache fresh;
        EXPECT_EQ(m.closing_tokens(trie, vocab, fresh, steps), steps);
        if (steps > 0) {
            EXPECT_EQ(m.closing_tokens(trie, vocab, fresh, steps - 1), steps - 1);
        }
        EXPECT_EQ(m.tokens(), 1u) << "closing_tokens left the matcher where it was";
    }
}

}  // namespace
}  // namespace kite::grammar
