// JsonKeyGuard on a small hand-made vocabulary: which tokens it takes out of a full mask after
// a given JSON prefix, written out by hand for each case.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/json_key_guard.h"

namespace kite::grammar {
namespace {

TokenizerVocab vocab_of(const std::vector<std::string>& tokens) {
    return tokenizer_vocab(tokens, {});
}

// The tokens of `vocab` a full mask keeps after `prefix` (and `skip` bytes of frame).
std::vector<std::string> kept_after(const TokenizerVocab& vocab, const std::string& prefix,
                                    size_t skip = 0) {
    JsonKeyGuard guard(vocab, skip);
    guard.feed(prefix);
    std::vector<uint64_t> mask((vocab.bytes.size() + 63) / 64, 0);
    for (size_t t = 0; t < vocab.bytes.size(); ++t) mask[t >> 6] |= 1ULL << (t & 63);
    guard.filter(mask);
    std::vector<std::string> kept;
    for (size_t t = 0; t < vocab.bytes.size(); ++t)
        if ((mask[t >> 6] >> (t & 63)) & 1) kept.push_back(vocab.bytes[t]);
    return kept;
}

using Tokens = std::vector<std::string>;

TEST(JsonKeyGuard, ANameTheObjectHoldsCannotBeClosedAgain) {
    const TokenizerVocab v =
        vocab_of({"\"a\"", "\"a\":", "\"b\"", "\"ab\"", "\"", "a\"", "1", "}"});
    EXPECT_EQ(kept_after(v, "{\"a\":1,"), (Tokens{"\"b\"", "\"ab\"", "\"", "a\"", "1", "}"}));
    // Read across tokens: the name "a" is closed by `a"` after an opening quote.
    EXPECT_EQ(kept_after(v, "{\"a\":1,\""),
              (Tokens{"\"a\"", "\"a\":", "\"b\"", "\"ab\"", "\"", "1", "}"}));
    // A name is a name only in a name's place: string values repeat freely.
    EXPECT_EQ(kept_after(v, "{\"a\":").size(), v.bytes.size());
    EXPECT_EQ(kept_after(v, "{\"x\":\"a\",\"y\":").size(), v.bytes.size());
}

TEST(JsonKeyGuard, EachObjectHasItsOwnNames) {
    const TokenizerVocab v = vocab_of({",\"a\"", "},\"a\"", "},\"b\"", "{\"a\"", "\"a\""});
    // Inside the inner object "a" is taken; closing it returns to the outer one, where "a" is
    // taken or not. A string after a value is no name (`"a"` is kept).
    EXPECT_EQ(kept_after(v, "{\"a\":{\"a\":1"), (Tokens{"},\"b\"", "{\"a\"", "\"a\""}));
    EXPECT_EQ(kept_after(v, "{\"b\":{\"a\":1"), (Tokens{"},\"a\"", "{\"a\"", "\"a\""}));
    // A new object starts empty, though the outer one holds "a"; in an array a string is a value.
    EXPECT_EQ(kept_after(v, "{\"a\":[{\"a\":1},{").size(), v.bytes.size());
}

TEST(JsonKeyGuard, EscapesAreReadAsWritten) {
    const TokenizerVocab v = vocab_of({"\"a\\\"b\"", "\"a\\\"", "b\"", "\"a\""});
    // The name a\"b is held; its escaped quote does not end it.
    EXPECT_EQ(kept_after(v, "{\"a\\\"b\":1,"), (Tokens{"\"a\\\"", "b\"", "\"a\""}));
    EXPECT_EQ(kept_after(v, "{\"a\\\"b\":1,\"a\\\""), (Tokens{"\"a\\\"b\"", "\"a\\\"", "\"a\""}));
}

TEST(JsonKeyGuard, TheFrameIsSkippedAndTheEndStopsTheGuard) {
    const TokenizerVocab v = vocab_of({"\"a\"", "\"b\""});
    // A Mistral-style frame whose brackets are not JSON.
    EXPECT_EQ(kept_after(v, "[TOOLS]{\"a\":1,", 7), (Tokens{"\"b\""}));
    EXPECT_EQ(kept_after(v, "{\"a\":1}"), (Tokens{"\"a\"", "\"b\""}));
}

TEST(JsonKeyGuard, AMaskOfOnlyRepeatsIsLeftAsItWas) {
    const TokenizerVocab v = vocab_of({"a\"", "a\":"});
    EXPECT_EQ(kept_after(v, "{\"a\":1,\"b"), (Tokens{"a\"", "a\":"}));
    EXPECT_EQ(kept_after(v, "{\"a\":1,\""), (Tokens{"a\"", "a\":"}));  // both repeat: kept
}

}  // namespace
}  // namespace kite::grammar
