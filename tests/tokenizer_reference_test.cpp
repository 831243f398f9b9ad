// The default model's tokenizer against llama.cpp's tokenizer on the same file
// (fixture written by tools/make-tokenizer-fixtures.sh).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace kite {
namespace {

TEST(TokenizerReference, MatchesLlamaCppOnTheDefaultModel) {
    std::ifstream in(std::string(KITE_SOURCE_DIR) + "/tests/fixtures/smollm2_tokenize.json");
    ASSERT_TRUE(in) << "missing fixture";
    const nlohmann::json fixture = nlohmann::json::parse(in);
    auto file = GgufFile::open(test::default_model_path());
    auto tok = Tokenizer::from_gguf(*file);
    ASSERT_FALSE(fixture["add_bos"].get<bool>());
    const bool parse_special = fixture["parse_special"].get<bool>();
    int checked = 0;
    for (const auto& c : fixture["cases"]) {
        const std::string text = c["text"];
        const std::vector<int32_t> expected = c["ids"];
        EXPECT_EQ(tok->encode(text, false, parse_special), expected) << "text: " << text;
        checked++;
    }
    EXPECT_GE(checked, 20);
}

}  // namespace
}  // namespace kite
