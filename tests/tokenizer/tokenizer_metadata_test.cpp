// Tokenizers built from small hand-made vocabularies: the algorithms on cases small enough to
// check by hand, and every kind of bad tokenizer metadata rejected with a clear kite::Error.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/tokenizer.h"

namespace kite {
namespace {

const std::string kSpace = "\xE2\x96\x81";  // SentencePiece's ▁
const std::string kG = "\xC4\xA0";          // byte-level BPE's Ġ (the space byte)

struct Spec {
    std::string model = "gpt2";
    std::string pre = "gpt-2";
    std::vector<std::string> tokens{"<|endoftext|>", "a", "b", "c", "ab", "abc", kG, kG + "a"};
    std::vector<int32_t> types{3, 1, 1, 1, 1, 1, 1, 1};
    std::vector<float> scores;
    std::vector<std::string> merges{"a b", "ab c", kG + " a"};
    std::function<void(GgufWriter&)> extra = [](GgufWriter&) {};
};

Spec spm_spec() {
    Spec s;
    s.model = "llama";
    s.pre = "default";
    s.tokens = {"<unk>", "<s>",        "</s>", kSpace,        "a",
                "b",     kSpace + "a", "ab",   kSpace + "ab", "<0x7A>"};
    s.types = {2, 3, 3, 1, 1, 1, 1, 1, 1, 6};
    s.scores = {0, 0, 0, -1, -2, -3, -0.5f, -0.4f, -0.1f, 0};
    s.merges.clear();
    return s;
}

// The GGUF bytes stay alive with the file that points into them.
struct Built {
    std::vector<uint8_t> bytes;
    std::unique_ptr<GgufFile> file;
};

Built build(const Spec& s) {
    GgufWriter w;
    if (!s.model.empty()) w.add_string("tokenizer.ggml.model", s.model);
    if (!s.pre.empty()) w.add_string("tokenizer.ggml.pre", s.pre);
    w.add_string_array("tokenizer.ggml.tokens", std::span<const std::string>(s.tokens));
    if (!s.types.empty()) w.add_i32_array("tokenizer.ggml.token_type", s.types);
    if (!s.scores.empty()) w.add_f32_array("tokenizer.ggml.scores", s.scores);
    if (!s.merges.empty())
        w.add_string_array("tokenizer.ggml.merges", std::span<const std::string>(s.merges));
    s.extra(w);
    Built b;
    b.bytes = w.to_bytes();
    b.file = GgufFile::parse(b.bytes, "tiny.gguf");
    return b;
}

std::unique_ptr<Tokenizer> tokenizer(const Spec& s) {
    return Tokenizer::from_gguf(*build(s).file);
}

// The message of the kite::Error that loading throws, or "" when it loads.
std::string error_of(const Spec& s) {
    try {
        tokenizer(s);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

void expect_error(const Spec& s, const std::string& needle) {
    const std::string message = error_of(s);
    EXPECT_NE(message.find(needle), std::string::npos) << "error was: '" << message << "'";
    EXPECT_NE(message.find("tiny.gguf"), std::string::npos) << message;
}

using Ids = std::vector<int32_t>;

TEST(TokenizerTiny, BytePairMergesByRank) {
    const auto tok = tokenizer(Spec{});
    EXPECT_EQ(tok->encode("abc", false, false), (Ids{5}));
    EXPECT_EQ(tok->encode("cab", false, false), (Ids{3, 4}));
    EXPECT_EQ(tok->encode("ab a", false, false), (Ids{4, 7}));  // " a" is one piece: Ġa
    EXPECT_EQ(tok->decode(Ids{4, 7}), "ab a");
    EXPECT_EQ(tok->encode("a<|endoftext|>", false, true), (Ids{1, 0}));
    EXPECT_EQ(tok->bos(), kNoToken);
    EXPECT_EQ(tok->encode("a", true, true), (Ids{1}));  // no BOS to add
}

TEST(TokenizerTiny, SentencePieceMergesByScore) {
    const auto tok = tokenizer(spm_spec());
    // "▁ab": "ab" (-0.4) beats "▁a" (-0.5), then "▁ab" forms; BOS by default for "llama".
    EXPECT_EQ(tok->encode("ab", true, false), (Ids{1, 8}));
    EXPECT_EQ(tok->decode(Ids{1, 8}), "<s>ab");
    EXPECT_EQ(tok->decode(Ids{1, 8}, false), "ab");
    EXPECT_EQ(tok->encode("z", false, false), (Ids{3, 9}));  // byte fallback <0x7A>
    EXPECT_EQ(tok->decode(Ids{3, 9}), "z");
    EXPECT_EQ(tok->encode("q", false, false), (Ids{3, 0}));         // no byte token: <unk>
    EXPECT_EQ(tok->encode("a</s>a", false, true), (Ids{6, 2, 6}));  // a space after specials
    EXPECT_EQ(tok->decode(Ids{6, 2, 6}), "a</s>a");
}

TEST(TokenizerTiny, SentencePieceHonoursAddSpacePrefix) {
    Spec s = spm_spec();
    s.extra = [](GgufWriter& w) { w.add_bool("tokenizer.ggml.add_space_prefix", false); };
    const auto tok = tokenizer(s);
    EXPECT_EQ(tok->encode("ab", false, false), (Ids{7}));
    EXPECT_EQ(tok->decode(Ids{6}), " a");  // nothing was added, so nothing is removed
}

TEST(TokenizerMetadata, RejectsAnUnknownTokenizerModel) {
    Spec s;
    s.model = "wordpiece";
    expect_error(s, "unknown tokenizer model 'wordpiece'");
}

TEST(TokenizerMetadata, RejectsAFileWithoutTokenizer) {
    Spec s;
    s.model = "";
    expect_error(s, "tokenizer.ggml.model is missing");
}

TEST(TokenizerMetadata, RejectsAnUnknownPreTokenizer) {
    Spec s;
    s.pre = "klingon";
    expect_error(s, "unknown pre-tokenizer 'klingon'");
}

TEST(TokenizerMetadata, RejectsMismatchedArrayLengths) {
    Spec types;
    types.types.pop_back();
    expect_error(types, "tokenizer.ggml.token_type has 7 entries but the vocabulary has 8");
    Spec scores = spm_spec();
    scores.scores.push_back(0);
    expect_error(scores, "tokenizer.ggml.scores has 11 entries");
}

TEST(TokenizerMetadata, RejectsSpecialIdsOutOfRange) {
    for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                            "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.eot_token_id",
                            "tokenizer.ggml.padding_token_id"}) {
        Spec s;
        s.extra = [key](GgufWriter& w) { w.add_u32(key, 8); };
        expect_error(s, std::string(key) + " = 8 is out of range");
        s.extra = [key](GgufWriter& w) { w.add_i32(key, -3); };
        expect_error(s, std::string(key) + " = -3 is out of range");
    }
}

TEST(TokenizerMetadata, RejectsBadMerges) {
    Spec missing;
    missing.merges.clear();
    expect_error(missing, "tokenizer.ggml.merges is missing");
    Spec malformed;
    malformed.merges.push_back("abc");
    expect_error(malformed, "tokenizer.ggml.merges[3] = 'abc' is not two tokens");
}

TEST(TokenizerMetadata, RejectsMissingOrMistypedTokens) {
    Spec empty;
    empty.tokens.clear();
    empty.types.clear();
    expect_error(empty, "tokenizer.ggml.tokens is missing or empty");

    GgufWriter w;
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.tokens", "not an array");
    const std::vector<uint8_t> bytes = w.to_bytes();
    const auto file = GgufFile::parse(bytes, "tiny.gguf");
    EXPECT_THROW(Tokenizer::from_gguf(*file), Error);
}

TEST(TokenizerMetadata, RejectsAddBosWithoutBos) {
    Spec s;
    s.extra = [](GgufWriter& w) { w.add_bool("tokenizer.ggml.add_bos_token", true); };
    expect_error(s, "add_bos_token is set but there is no tokenizer.ggml.bos_token_id");
}

}  // namespace
}  // namespace kite
