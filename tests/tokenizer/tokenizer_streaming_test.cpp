// StreamingDecoder: one token at a time, never a broken UTF-8 sequence, and the same text as
// decoding the whole sequence at once.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/utf8.h"
#include "gguf/gguf_file.h"
#include "test_paths.h"
#include "tokenizer/streaming_decoder.h"
#include "tokenizer/tokenizer.h"

namespace kite {
namespace {

struct Loaded {
    std::unique_ptr<GgufFile> file;
    std::unique_ptr<Tokenizer> tok;
};

Loaded load(const std::string& path) {
    Loaded l;
    l.file = GgufFile::open(path);
    l.tok = Tokenizer::from_gguf(*l.file);
    return l;
}

const Tokenizer& smollm() {
    static const Loaded l = load(test::default_model_path());
    return *l.tok;
}

// A SentencePiece vocabulary: emoji come out as <0xXX> byte tokens, one byte per token.
const Tokenizer& llama_spm() {
    static const Loaded l = load(test::testdata_dir() + "/vocab/ggml-vocab-llama-spm.gguf");
    return *l.tok;
}

struct Streamed {
    std::string text;
    size_t held_back = 0;  // pushes that returned nothing because a character was unfinished
};

Streamed stream(const Tokenizer& tok, const std::vector<int32_t>& ids) {
    StreamingDecoder decoder(tok);
    Streamed s;
    for (int32_t id : ids) {
        const std::string part = decoder.push(id);
        EXPECT_TRUE(is_valid_utf8(part)) << "token " << id;
        s.held_back += part.empty();
        s.text += part;
    }
    const std::string rest = decoder.finish();
    EXPECT_TRUE(is_valid_utf8(rest));
    s.text += rest;
    return s;
}

const std::string kMixed =
    "Emoji 🦙🚀😶‍🌫️ split across tokens, CJK 我想在apple工作, Khmer "
    "កាន់តែពិសេស, "
    "Hangul 한국어 and accents Cửa Việt.";

TEST(TokenizerStreaming, ByteLevelBpeEmitsOnlyCompleteCharacters) {
    const std::vector<int32_t> ids = smollm().encode(kMixed, false, false);
    const Streamed s = stream(smollm(), ids);
    EXPECT_EQ(s.text, smollm().decode(ids));
    EXPECT_EQ(s.text, kMixed);
    EXPECT_GT(s.held_back, 0u) << "the text should split some character across tokens";
}

TEST(TokenizerStreaming, SentencePieceByteTokensAndSpacePrefix) {
    const std::vector<int32_t> ids = llama_spm().encode(kMixed, true, false);
    ASSERT_EQ(ids.front(), llama_spm().bos());
    const Streamed s = stream(llama_spm(), ids);
    EXPECT_EQ(s.text, llama_spm().decode(ids));
    EXPECT_EQ(s.text, "<s>" + kMixed);  // the space added after <s> is removed again
    EXPECT_GT(s.held_back, 0u);
}

TEST(TokenizerStreaming, SpecialTokensCanBeLeftOut) {
    const std::vector<int32_t> ids = smollm().encode("<|im_start|>Hi 🦙<|im_end|>", false, true);
    StreamingDecoder decoder(smollm(), false);
    std::string text;
    for (int32_t id : ids) text += decoder.push(id);
    text += decoder.finish();
    EXPECT_EQ(text, "Hi 🦙");
    EXPECT_EQ(text, smollm().decode(ids, false));
}

TEST(TokenizerStreaming, ReplacesBytesThatCanNeverBeValid) {
    // A lone continuation byte, and an unfinished "\xe6\x88" at the end: never emitted raw.
    const std::string bad = "ok \x80 then \xe6\x88";
    const std::vector<int32_t> ids = smollm().encode(bad, false, false);
    EXPECT_EQ(smollm().decode(ids), bad);
    const Streamed s = stream(smollm(), ids);
    EXPECT_EQ(s.text, "ok \xEF\xBF\xBD then \xEF\xBF\xBD");
}

TEST(TokenizerStreaming, HoldsBackAnUnfinishedCharacter) {
    // 🦙 is F0 9F A6 99; in the SentencePiece vocabulary each byte is its own token.
    const std::vector<int32_t> bytes = {
        llama_spm().find_piece("<0xF0>"), llama_spm().find_piece("<0x9F>"),
        llama_spm().find_piece("<0xA6>"), llama_spm().find_piece("<0x99>")};
    StreamingDecoder decoder(llama_spm());
    EXPECT_EQ(decoder.push(bytes[0]), "");
    EXPECT_EQ(decoder.push(bytes[1]), "");
    EXPECT_EQ(decoder.push(bytes[2]), "");
    EXPECT_EQ(decoder.push(bytes[3]), "🦙");
    EXPECT_EQ(decoder.push(bytes[0]), "");
    EXPECT_EQ(decoder.finish(), "\xEF\xBF\xBD");        // the stream ended inside a character
    EXPECT_EQ(decoder.push(bytes[3]), "\xEF\xBF\xBD");  // a new stream: a lone continuation byte
}

TEST(TokenizerUtf8, ClassifiesSequences) {
    EXPECT_EQ(valid_utf8_prefix("abc"), 3u);
    EXPECT_EQ(valid_utf8_prefix("a\xC3\xA9"), 3u);
    EXPECT_EQ(valid_utf8_prefix("a\xC3"), 1u);
    EXPECT_EQ(next_utf8_sequence("\xF0\x9F\xA6").status, Utf8Status::Incomplete);
    EXPECT_EQ(next_utf8_sequence("\xC0\x80").status, Utf8Status::Invalid);          // overlong
    EXPECT_EQ(next_utf8_sequence("\xED\xA0\x80").status, Utf8Status::Invalid);      // surrogate
    EXPECT_EQ(next_utf8_sequence("\xF4\x90\x80\x80").status, Utf8Status::Invalid);  // > 10FFFF
    EXPECT_EQ(next_utf8_sequence("\x80").status, Utf8Status::Invalid);
    std::string s;
    append_utf8(0x1F999, s);
    EXPECT_EQ(s, "🦙");
    EXPECT_EQ(decode_utf8(s), 0x1F999u);
}

}  // namespace
}  // namespace kite
