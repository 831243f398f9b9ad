// The Earley matcher on small hand-written grammars: acceptance, recursion, nullable and
// left-recursive rules, counted repetition, UTF-8 classes, rollback, and token masks checked
// against feeding every token on its own.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_trie.h"

namespace kite::grammar {
namespace {

bool full_match(const std::shared_ptr<const Grammar>& g, const std::string& text) {
    Matcher m(g);
    return m.advance(text) && m.can_stop();
}

std::shared_ptr<const Grammar> nested_brackets() {
    GrammarBuilder b;
    // value ::= "[" (value ("," value)*)? "]" | [0-9]+
    b.define("value",
             alt({seq({lit("["), opt(seq({ref("value"), star(seq({lit(","), ref("value")}))})),
                       lit("]")}),
                  plus(char_class({{'0', '9'}}))}));
    return b.build("value");
}

TEST(GrammarMatcher, AcceptsNestedRecursion) {
    const auto g = nested_brackets();
    for (const char* ok : {"[]", "7", "[1,[2,[3,[]]],45]", "[[[[[[[]]]]]]]"})
        EXPECT_TRUE(full_match(g, ok)) << ok;
    for (const char* bad : {"[", "[1,]", "[,1]", "[[]", "a", "", "1]"})
        EXPECT_FALSE(full_match(g, bad)) << bad;
}

TEST(GrammarMatcher, PrefixesAreAcceptedButCannotStop) {
    Matcher m(nested_brackets());
    ASSERT_TRUE(m.advance("[1,[2"));
    EXPECT_FALSE(m.can_stop());
    EXPECT_FALSE(m.accepts("]]]"));
    EXPECT_TRUE(m.accepts("]]"));
    EXPECT_FALSE(m.advance("x"));
    ASSERT_TRUE(m.advance("]]"));
    EXPECT_TRUE(m.can_stop());
}

TEST(GrammarMatcher, LeftRecursionAndNullableRules) {
    GrammarBuilder b;
    b.define("list", alt({seq({ref("list"), lit("a")}), ref("nothing")}));
    b.define("nothing", alt({empty(), seq({ref("nothing"), ref("nothing")})}));
    b.define("root", seq({ref("nothing"), ref("list"), lit("b"), ref("nothing")}));
    const auto g = b.build("root");
    EXPECT_TRUE(full_match(g, "b"));
    EXPECT_TRUE(full_match(g, "aaaab"));
    EXPECT_FALSE(full_match(g, "aaaa"));
    EXPECT_FALSE(full_match(g, "ba"));
}

TEST(GrammarMatcher, CountedRepetition) {
    GrammarBuilder b;
    b.define("root", repeat(lit("ab"), 2, 4));
    const auto g = b.build("root");
    EXPECT_FALSE(full_match(g, "ab"));
    EXPECT_TRUE(full_match(g, "abab"));
    EXPECT_TRUE(full_match(g, "abababab"));
    EXPECT_FALSE(full_match(g, "ababababab"));
    GrammarBuilder exact;
    exact.define("root", repeat(lit("ab"), 2, 2));
    const auto twice = exact.build("root");
    EXPECT_TRUE(full_match(twice, "abab"));
    EXPECT_FALSE(full_match(twice, "ababab"));
    GrammarBuilder c;
    c.define("root", repeat(lit("x"), 3, kUnbounded));
    const auto h = c.build("root");
    EXPECT_FALSE(full_match(h, "xx"));
    EXPECT_TRUE(full_match(h, "xxxxxxx"));
}

// Right recursion goes through Leo's shortcut (one topmost completion instead of a chain):
// the languages must stay exactly what the grammars say, including where a chain is broken
// by a second waiter (ambiguity) or by an item that does not end with the recursive rule.
TEST(GrammarMatcher, RightRecursionAndLongCountedRepetitions) {
    GrammarBuilder b;
    b.define("root", seq({lit("\""), repeat(char_class({{'a', 'z'}}), 0, 3000), lit("\"")}));
    const auto g = b.build("root");
    EXPECT_TRUE(full_match(g, "\"" + std::string(3000, 'q') + "\""));
    EXPECT_TRUE(full_match(g, "\"\""));
    EXPECT_FALSE(full_match(g, "\"" + std::string(3001, 'q') + "\""));
    Matcher m(g);
    ASSERT_TRUE(m.advance("\"" + std::string(2999, 'q')));
    EXPECT_TRUE(m.accepts("q\""));
    EXPECT_FALSE(m.accepts("qq"));
    EXPECT_TRUE(m.accepts("\""));
    GrammarBuilder r;
    // list ::= item "," list | item; item ::= "a" | "a" item (ambiguous: "aa" is two ways)
    r.define("list", alt({seq({ref("item"), lit(","), ref("list")}), ref("item")}));
    r.define("item", alt({lit("a"), seq({lit("a"), ref("item")})}));
    r.define("root", seq({ref("list"), lit(";")}));
    const auto h = r.build("root");
    for (const char* ok : {"a;", "aaa;", "a,aa,a;", "aaaa,a,a,aaaaa;"})
        EXPECT_TRUE(full_match(h, ok)) << ok;
    for (const char* bad : {";", "a,;", ",a;", "a,a", "aa,,a;"})
        EXPECT_FALSE(full_match(h, bad)) << bad;
    GrammarBuilder n;
    // Right recursion through nullable and unit rules: tail ::= "x" more; more ::= tail | empty.
    n.define("tail", seq({lit("x"), ref("more")}));
    n.define("more", alt({ref("tail"), empty()}));
    n.define("root", seq({ref("tail"), lit("!"), ref("more")}));
    const auto k = n.build("root");
    for (const char* ok : {"x!", "xxxx!", "x!x", "xxx!xxxx"}) EXPECT_TRUE(full_match(k, ok)) << ok;
    for (const char* bad : {"!", "x", "xx!!", "!x"}) EXPECT_FALSE(full_match(k, bad)) << bad;
}

TEST(GrammarMatcher, Utf8ClassesMatchWholeCharacters) {
    GrammarBuilder b;
    // Any character but '"' and the letters a-z.
    b.define("root", plus(char_class({{'"', '"'}, {'a', 'z'}}, true)));
    const auto g = b.build("root");
    EXPECT_TRUE(full_match(g, "Z\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // Zé€😀
    EXPECT_FALSE(full_match(g, "Za"));
    EXPECT_FALSE(full_match(g, "\""));
    EXPECT_FALSE(full_match(g, "\xc3"));          // a truncated character
    EXPECT_FALSE(full_match(g, "\xed\xa0\x80"));  // a surrogate
    EXPECT_FALSE(full_match(g, "\xc0\xaf"));      // an overlong encoding
    GrammarBuilder c;
    c.define("root", char_class({{0x400, 0x4FF}}));  // Cyrillic
    const auto h = c.build("root");
    EXPECT_TRUE(full_match(h, "\xd0\x96"));
    EXPECT_FALSE(full_match(h, "\xd5\x80"));
}

TEST(GrammarMatcher, RollbackUndoesTokens) {
    Matcher m(nested_brackets());
    ASSERT_TRUE(m.advance("["));
    ASSERT_TRUE(m.advance("1"));
    ASSERT_TRUE(m.advance(",2"));
    EXPECT_EQ(m.tokens(), 3u);
    m.rollback(2);
    EXPECT_EQ(m.tokens(), 1u);
    EXPECT_TRUE(m.accepts("]"));
    ASSERT_TRUE(m.advance("]"));
    EXPECT_TRUE(m.can_stop());
}

TEST(GrammarMatcher, UndefinedRuleAndEmptyLanguageAreErrors) {
    GrammarBuilder b;
    b.define("root", ref("missing"));
    EXPECT_THROW(b.build("root"), GrammarError);
    GrammarBuilder c;
    c.define("root", seq({lit("a"), ref("loop")}));
    c.define("loop", seq({lit("b"), ref("loop")}));
    EXPECT_THROW(c.build("root"), GrammarError);
}

TEST(GrammarMatcher, MaskEqualsFeedingEachToken) {
    const std::vector<std::string> vocab = {"[", "]", "[]", ",",  "1",   "12", "1,",   "]]",
                                            "a", "",  "[1", ",[", "]]]", "0]", "<eos>"};
    std::vector<std::string> bytes = vocab;
    bytes.back().clear();  // the stop token has no bytes of its own
    const TokenTrie trie(bytes, {14});
    Matcher m(nested_brackets());
    MaskCache cache;
    for (const char* step : {"", "[", "1", ",", "[", "]", "]"}) {
        ASSERT_TRUE(m.advance(step));
        std::vector<uint64_t> mask;
        m.allowed_tokens(trie, mask);
        for (size_t t = 0; t + 1 < vocab.size(); ++t) {
            const bool want = !vocab[t].empty() && m.accepts(vocab[t]);
            EXPECT_EQ(((mask[0] >> t) & 1) != 0, want) << "after '" << step << "' token " << t;
        }
        EXPECT_EQ(((mask[0] >> 14) & 1) != 0, m.can_stop());
        // A cached mask (computed now, or found from an equal earlier state) is the same.
        std::vector<uint64_t> cached;
        m.allowed_tokens(trie, cached, &cache);
        EXPECT_EQ(cached, mask) << "after '" << step << "'";
    }
}

}  // namespace
}  // namespace kite::grammar
