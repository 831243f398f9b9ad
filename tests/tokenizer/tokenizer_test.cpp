// The tokenizer of the default model (SmolLM2: byte-level BPE, "smollm" pre-tokenizer):
// round trips, special tokens, end of generation, speed.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace kite {
namespace {

// Loaded once: the vocabulary has 49152 tokens and 48900 merges.
const Tokenizer& smollm() {
    static const std::unique_ptr<GgufFile> file = GgufFile::open(test::default_model_path());
    static const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(*file);
    return *tok;
}

std::vector<int32_t> plain(std::string_view text) {
    return smollm().encode(text, false, false);
}

TEST(Tokenizer, ReadsTheDefaultModelsMetadata) {
    const Tokenizer& t = smollm();
    EXPECT_EQ(t.n_vocab(), 49152u);
    EXPECT_EQ(t.bos(), 1);
    EXPECT_EQ(t.eos(), 2);
    EXPECT_FALSE(t.adds_bos());
    EXPECT_EQ(t.piece(1), "<|im_start|>");
    EXPECT_EQ(t.piece(2), "<|im_end|>");
    EXPECT_EQ(t.vocab().pre, "smollm");
}

TEST(Tokenizer, RoundTripsText) {
    const std::string texts[] = {
        "Hello world",
        "  leading and trailing spaces  ",
        "tabs\tand\nnewlines\r\n\n",
        "int main() { return 0; }  // code",
        "Zürich, Ελληνικά, русский, 日本語, 한국어, العربية",
        "emoji 🦙🚀 and a ZWJ family 👨‍👩‍👧",
        "numbers 3.14159 and 1,000,000",
        "",
        "not UTF-8: \xe6\x88 \xc3 \x80",  // bytes the vocabulary spells survive as they are
    };
    for (const std::string& text : texts) {
        const std::vector<int32_t> ids = plain(text);
        EXPECT_EQ(smollm().decode(ids), text);
        EXPECT_EQ(smollm().encode(text, true, true), ids) << "no BOS for this model: " << text;
    }
}

TEST(Tokenizer, DropsBytesTheVocabularyCannotSpell) {
    // SmolLM2 has no token for 0xFF, 0xFE or 0x04 (llama.cpp and Hugging Face drop them too).
    const std::string text = std::string("a\xff\xfe b\x04") + "c";  // "\x04c" would be one escape
    const std::vector<int32_t> ids = plain(text);
    EXPECT_EQ(smollm().decode(ids), "a bc");
    EXPECT_EQ(std::count(ids.begin(), ids.end(), smollm().unknown()), 0);
}

TEST(Tokenizer, SplitsDigitsOneByOne) {
    // The smollm pre-tokenizer puts every digit in a piece of its own.
    const std::vector<int32_t> ids = plain("12345");
    ASSERT_EQ(ids.size(), 5u);
    for (size_t i = 0; i < ids.size(); ++i)
        EXPECT_EQ(smollm().token_text(ids[i]), std::string(1, char('1' + i)));
}

TEST(Tokenizer, KnowsCommonWords) {
    const std::vector<int32_t> ids = plain("Hello world");
    ASSERT_EQ(ids.size(), 2u);
    EXPECT_EQ(smollm().piece(ids[0]), "Hello");
    EXPECT_EQ(smollm().piece(ids[1]), "\xC4\xA0world");  // "Ġworld": Ġ spells the space
    EXPECT_EQ(smollm().token_text(ids[1]), " world");
}

TEST(Tokenizer, ParsesSpecialTokensOnlyWhenAsked) {
    const std::string chat = "<|im_start|>user\nHi!<|im_end|>\n";
    const std::vector<int32_t> parsed = smollm().encode(chat, false, true);
    ASSERT_GE(parsed.size(), 4u);
    EXPECT_EQ(parsed.front(), 1);  // <|im_start|> as one token
    EXPECT_EQ(std::count(parsed.begin(), parsed.end(), 2), 1);
    EXPECT_EQ(smollm().decode(parsed), chat);
    EXPECT_EQ(smollm().decode(parsed, false), "user\nHi!\n");

    // As plain text the markers are spelled with ordinary tokens and cannot be injected.
    const std::vector<int32_t> literal = plain(chat);
    EXPECT_EQ(std::count(literal.begin(), literal.end(), 1), 0);
    EXPECT_EQ(std::count(literal.begin(), literal.end(), 2), 0);
    EXPECT_GT(literal.size(), parsed.size());
    EXPECT_EQ(smollm().decode(literal), chat);
}

TEST(Tokenizer, SpecialTokensSplitTheTextAroundThem) {
    const std::vector<int32_t> ids = smollm().encode("a<|im_end|>b", false, true);
    ASSERT_EQ(ids.size(), 3u);
    EXPECT_EQ(smollm().token_text(ids[0]), "a");
    EXPECT_EQ(ids[1], 2);
    EXPECT_EQ(smollm().token_text(ids[2]), "b");
}

TEST(Tokenizer, KnowsWhereGenerationEnds) {
    EXPECT_TRUE(smollm().is_end_of_generation(2));  // <|im_end|>, the EOS
    EXPECT_TRUE(smollm().is_end_of_generation(0));  // <|endoftext|>
    EXPECT_FALSE(smollm().is_end_of_generation(1));
    EXPECT_FALSE(smollm().is_end_of_generation(plain("Hello")[0]));
    EXPECT_TRUE(smollm().is_special(1));
    EXPECT_FALSE(smollm().is_special(plain("Hello")[0]));
}

TEST(Tokenizer, RejectsIdsOutsideTheVocabulary) {
    const std::vector<int32_t> bad{19556, 49152};
    EXPECT_THROW(smollm().decode(bad), Error);
    EXPECT_THROW(smollm().token_text(-1), Error);
    EXPECT_THROW(smollm().piece(1 << 30), Error);
}

TEST(Tokenizer, EncodesTenKilobytesInMilliseconds) {
    std::string text;
    while (text.size() < 10 * 1024)
        text += "The quick brown fox jumps over the lazy dog; 1234 Zürich 日本語 🦙\n    ";
    smollm().encode("warm up", false, false);
    const auto start = std::chrono::steady_clock::now();
    const std::vector<int32_t> ids = plain(text);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::cout << "[ timing   ] " << text.size() << " bytes -> " << ids.size() << " tokens in " << ms
              << " ms\n";
    EXPECT_EQ(smollm().decode(ids), text);
    EXPECT_LT(ms, 500.0);  // a few ms in release builds; generous for sanitizer builds
}

}  // namespace
}  // namespace kite
