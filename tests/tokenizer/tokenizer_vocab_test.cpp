// Conformance: the tokenizer vectors of ../shared/testdata/vocab (ids the reference
// tokenizer produced for each test string) must come out exactly, and decode must undo encode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace kite {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// X.gguf.inp is a sequence of "<test>\n__ggml_vocab_test__\n": every test string is followed
// by a newline and the separator line, except in some files the last one, which ends the file.
std::vector<std::string> read_inputs(const fs::path& p) {
    const std::string data = read_file(p);
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> out;
    size_t pos = 0;
    for (size_t at; (at = data.find(sep, pos)) != std::string::npos; pos = at + sep.size())
        out.push_back(data.substr(pos, at - pos));
    if (pos < data.size()) out.push_back(data.substr(pos));
    return out;
}

// X.gguf.out: one line per test string, its ids separated by spaces (no BOS).
std::vector<std::vector<int32_t>> read_outputs(const fs::path& p) {
    std::istringstream in(read_file(p));
    std::vector<std::vector<int32_t>> out;
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::vector<int32_t> ids;
        for (int32_t id; words >> id;) ids.push_back(id);
        out.push_back(ids);
    }
    return out;
}

std::string show(const std::vector<int32_t>& ids) {
    std::ostringstream s;
    for (size_t i = 0; i < ids.size(); ++i) s << (i ? " " : "") << ids[i];
    return s.str();
}

std::string vocab_dir() {
    return test::testdata_dir() + "/vocab";
}

// Every X.gguf of the vocab folder and its next/ that has both X.gguf.inp and X.gguf.out, as a
// path relative to the vocab folder.
std::vector<std::string> vocab_names() {
    std::vector<std::string> names;
    for (const std::string sub : {"", "next/"}) {
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(vocab_dir() + "/" + sub, ec)) {
            const fs::path p = entry.path();
            if (p.extension() != ".gguf") continue;
            if (fs::exists(p.string() + ".inp") && fs::exists(p.string() + ".out"))
                names.push_back(sub + p.filename().string());
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

TEST(TokenizerConformance, FindsTheVocabVectors) {
    // Eight in the folder itself, six in next/.
    EXPECT_EQ(vocab_names().size(), 14u) << "in " << vocab_dir();
}

class TokenizerVocab : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerVocab, EncodesLikeTheReferenceAndDecodesBack) {
    const fs::path base = fs::path(vocab_dir()) / GetParam();
    const auto file = GgufFile::open(base.string());
    const auto tok = Tokenizer::from_gguf(*file);
    const auto inputs = read_inputs(base.string() + ".inp");
    const auto expected = read_outputs(base.string() + ".out");
    ASSERT_EQ(inputs.size(), expected.size());
    ASSERT_FALSE(inputs.empty());

    size_t encoded_ok = 0, decoded_ok = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const std::vector<int32_t> ids = tok->encode(inputs[i], false, false);
        EXPECT_EQ(show(ids), show(expected[i])) << "test " << i << ": '" << inputs[i] << "'";
        encoded_ok += ids == expected[i];
        // SentencePiece adds a space before the text; decode removes exactly that one, so the
        // round trip is exact for both kinds of vocabulary. WordPiece lower-cases, drops accents
        // and spacing, and spells what it cannot as [UNK]: its decode is not an inverse.
        if (tok->vocab().kind == VocabKind::WordPiece) continue;
        const std::string back = tok->decode(ids);
        EXPECT_EQ(back, inputs[i]) << "test " << i;
        decoded_ok += back == inputs[i];
    }
    const bool lossy = tok->vocab().kind == VocabKind::WordPiece;
    std::cout << "[ vectors  ] " << GetParam() << ": " << encoded_ok << "/" << inputs.size()
              << " encode, "
              << (lossy ? std::string("no")
                        : std::to_string(decoded_ok) + "/" + std::to_string(inputs.size()))
              << " decode\n";
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
    std::string name = info.param.substr(0, info.param.find(".gguf"));
    if (name.starts_with("next/")) name = name.substr(5);
    for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return name;
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, TokenizerVocab, ::testing::ValuesIn(vocab_names()), param_name);

}  // namespace
}  // namespace kite
