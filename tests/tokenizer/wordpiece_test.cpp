// WordPiece beyond the conformance vectors: [CLS] ... [SEP] around an encoded text, decoding,
// and the vocabulary of a real embedding model. Expected ids are those of llama.cpp's vectors
// for the bert-bge vocabulary (ggml-vocab-bert-bge.gguf.out).
#include <gtest/gtest.h>

#include "gguf/gguf_file.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace kite {
namespace {

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path) {
    return Tokenizer::from_gguf(*GgufFile::open(path));
}

std::string bge_path() {
    return test::testdata_dir() + "/vocab/next/ggml-vocab-bert-bge.gguf";
}

TEST(WordPiece, AddsClsAndSepAroundTheText) {
    const auto tok = open_tokenizer(bge_path());
    EXPECT_EQ(tok->encode(" Hello, world!", true, false),
              (std::vector<int32_t>{101, 7592, 1010, 2088, 999, 102}));
    EXPECT_EQ(tok->encode("", true, false), (std::vector<int32_t>{101, 102}));
}

TEST(WordPiece, DecodesWordsWithSpacesBetweenThem) {
    const auto tok = open_tokenizer(bge_path());
    const std::vector<int32_t> ids = tok->encode("Äpfel and apples", false, false);
    EXPECT_EQ(tok->decode(ids), "apfel and apples");
}

TEST(WordPiece, SpellsWhatTheVocabularyLacksAsUnknown) {
    const auto tok = open_tokenizer(bge_path());
    // An emoji has no piece; the word it is becomes [UNK] (100).
    EXPECT_EQ(tok->encode("\xF0\x9F\xA6\x99", false, false), (std::vector<int32_t>{100}));
}

TEST(WordPiece, TokenizesTheNomicEmbedVocabulary) {
    const std::string path = test::find_real_model("nomic-embed-v1.5");
    if (path.empty()) GTEST_SKIP() << "nomic-embed-v1.5 is not installed";
    const auto tok = open_tokenizer(path);
    EXPECT_EQ(tok->encode(" Hello, world!", true, false),
              (std::vector<int32_t>{101, 7592, 1010, 2088, 999, 102}));
}

}  // namespace
}  // namespace kite
