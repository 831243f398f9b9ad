// The JSON Schema conformance check on a fixed sample of JSONSchemaBench (every 632nd of the
// shared file's schemas: 13 of them, about a second) with the default model's tokenizer: no
// instance the schema rejects may be accepted, and the pass rate must not fall below what was
// measured (bench/structured-check.sh runs the whole set).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "grammar/conformance.h"
#include "grammar/tokenizer_vocab.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace kite::grammar {
namespace {

std::vector<nlohmann::ordered_json> sample_cases(size_t every) {
    const std::string path = test::testdata_dir() + "/jsonschema/maskbench-public.jsonl.gz";
    const std::string command = "gzip -dc '" + path + "'";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    std::vector<nlohmann::ordered_json> cases;
    std::string line;
    size_t n = 0;
    for (int c; pipe && (c = std::fgetc(pipe.get())) != EOF;) {
        if (c != '\n') {
            line += static_cast<char>(c);
            continue;
        }
        if (n++ % every == 0) cases.push_back(nlohmann::ordered_json::parse(line));
        line.clear();
    }
    return cases;
}

TEST(GrammarConformance, SampleOfJsonSchemaBench) {
    const std::vector<nlohmann::ordered_json> cases = sample_cases(632);
    ASSERT_EQ(cases.size(), 13u);
    const std::unique_ptr<GgufFile> file = GgufFile::open(test::default_model_path());
    const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(*file);
    const TokenizerVocab vocab = tokenizer_vocab(*tok);
    const Encode encode = [&](const std::string& text) { return tok->encode(text, false, false); };
    std::vector<CaseResult> results;
    for (const auto& c : cases) results.push_back(check_case(c, vocab.trie, vocab.bytes, encode));
    const Summary s = summarize(results);
    EXPECT_EQ(s.invalidation_errors, 0u);
    EXPECT_GE(s.passing, 11u);  // measured: 11 (2 schemas do not compile)
    EXPECT_LE(s.validation_errors * 100, s.instances * 2);
    std::printf("%s\n", to_json(s).dump().c_str());
}

}  // namespace
}  // namespace kite::grammar
