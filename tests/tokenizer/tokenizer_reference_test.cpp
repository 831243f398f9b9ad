// Tokenizers of real models against llama.cpp's tokenizer on the same file: the default model
// (fixture written by tools/make-tokenizer-fixtures.sh), and Qwen2.5-Coder and Gemma 3 when
// they are installed (tools/make-real-tokenizer-fixtures.sh).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace kite {
namespace {

namespace fs = std::filesystem;

// Every case of a fixture must encode to llama.cpp's ids.
void expect_fixture_matches(const std::string& fixture_path, const std::string& model_path) {
    std::ifstream in(fixture_path);
    ASSERT_TRUE(in) << "missing fixture " << fixture_path;
    const nlohmann::json fixture = nlohmann::json::parse(in);
    auto file = GgufFile::open(model_path);
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

TEST(TokenizerReference, MatchesLlamaCppOnTheDefaultModel) {
    expect_fixture_matches(std::string(KITE_SOURCE_DIR) + "/tests/fixtures/smollm2_tokenize.json",
                           test::default_model_path());
}

class RealModelTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(RealModelTokenizer, MatchesLlamaCpp) {
    const std::string model = test::find_real_model(GetParam());
    if (model.empty())
        GTEST_SKIP() << GetParam() << " is not installed (bash scripts/install-model.sh "
                     << GetParam() << ")";
    expect_fixture_matches(
        std::string(KITE_SOURCE_DIR) + "/tests/fixtures/real_tokenize/" + GetParam() + ".json",
        model);
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, RealModelTokenizer,
                         ::testing::Values("qwen2.5-coder-0.5b", "gemma3-270m"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             std::string name = info.param;
                             for (char& c : name)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return name;
                         });

}  // namespace
}  // namespace kite
