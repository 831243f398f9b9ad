// The matcher's byte-run fast path against the plain walk of the whole vocabulary: the same
// mask, bit for bit, in the states where the fast path applies (inside JSON strings with
// ASCII, UTF-8 and escapes, character-class loops of patterns, JSON mode) and on every token
// prefix of instances of real schemas, with the default model's 49k-token vocabulary.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "grammar/conformance.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/regex.h"
#include "grammar/tokenizer_vocab.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace kite::grammar {
namespace {

using json = nlohmann::ordered_json;

class ByteRuns : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        file_ = GgufFile::open(test::default_model_path());
        tok_ = Tokenizer::from_gguf(*file_);
        vocab_ = std::make_unique<TokenizerVocab>(tokenizer_vocab(*tok_));
    }
    static void TearDownTestSuite() {
        vocab_.reset();
        tok_.reset();
        file_.reset();
    }

    // Feeds `text` token by token (as the tokenizer splits it), comparing the fast and the
    // plain mask before each token; returns how many masks were compared.
    static size_t compare_along(const std::shared_ptr<const Grammar>& g, const std::string& text) {
        Matcher fast(g), plain(g);
        fast.set_fast_paths(true, 1);  // wherever a run applies, not only where it pays
        plain.set_fast_paths(false);
        std::vector<uint64_t> a, b;
        size_t n = 0;
        for (int32_t t : tok_->encode(text, false, false)) {
            fast.allowed_tokens(vocab_->trie, a);
            plain.allowed_tokens(vocab_->trie, b);
            EXPECT_EQ(a, b) << "masks differ after " << n << " tokens of " << text;
            ++n;
            if (!fast.advance(vocab_->bytes[t]) || !plain.advance(vocab_->bytes[t])) break;
        }
        return n;
    }

    static std::unique_ptr<GgufFile> file_;
    static std::unique_ptr<Tokenizer> tok_;
    static std::unique_ptr<TokenizerVocab> vocab_;
};

std::unique_ptr<GgufFile> ByteRuns::file_;
std::unique_ptr<Tokenizer> ByteRuns::tok_;
std::unique_ptr<TokenizerVocab> ByteRuns::vocab_;

TEST_F(ByteRuns, JsonStringsMatchThePlainWalk) {
    const auto g = compile_json_schema(json::parse(
        R"({"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array",
            "items":{"type":"string"}}},"required":["name"]})"));
    EXPECT_GT(compare_along(g, R"({"name":"Zoë \"the\" café\\n owner","tags":["a b","日本語"]})"),
              10u);
    EXPECT_GT(compare_along(json_object_grammar(), R"({"x":"plain words here","y":[1,"é\u0041"]})"),
              10u);
}

TEST_F(ByteRuns, PatternClassLoopsMatchThePlainWalk) {
    const auto g = compile_json_schema(json::parse(
        R"({"type":"object","properties":{"id":{"type":"string","pattern":"^[a-z_]+[0-9]*$"},
            "hex":{"type":"string","pattern":"^[0-9a-fA-F]+$"}}})"));
    EXPECT_GT(compare_along(g, R"({"id":"some_long_identifier_name42","hex":"deadBEEF0123"})"), 8u);
}

// The slow states of the shared set: a property name where many declared names and any
// other name may come (each declared first letter is its own branch; the walk under it reuses
// the string's loop set), long strings with maxLength (Leo's shortcut) and an enum.
TEST_F(ByteRuns, PropertyNamesCountedStringsAndEnumsMatchThePlainWalk) {
    json props = json::object();
    for (const char* name : {"name", "age", "address", "nickname", "notes", "tags", "title", "zip",
                             "email", "enabled", "id", "url", "x"})
        props[name] = json::parse(R"({"type":"string","maxLength":400})");
    props["kind"] = json::parse(R"({"enum":["alpha","beta","gamma","alphabet","be","delta"]})");
    const auto g = compile_json_schema(json{{"type", "object"}, {"properties", props}});
    EXPECT_GT(compare_along(g, R"({"name":"Some words, then more words and an end","age":"9",)"
                               R"("kind":"alphabet","nam":"other","names":"x","Zed":"z"})"),
              20u);
    const auto strings = compile_json_schema(
        json::parse(R"({"type":"array","items":{"type":"string","minLength":2,"maxLength":70}})"));
    EXPECT_GT(compare_along(strings, "[\"" + std::string(55, 'a') + " tail words\",\"ab\"]"), 10u);
}

TEST_F(ByteRuns, RealSchemasMatchThePlainWalk) {
    // A few schemas of the shared set, their instances' first tokens.
    const char* const schemas[] = {
        R"({"type":"object","properties":{"title":{"type":"string","minLength":1},
            "body":{"type":"string","maxLength":40},"when":{"type":"string","format":"date-time"}}})",
        R"({"type":"array","items":{"anyOf":[{"type":"string"},{"type":"number"}]}})",
        R"({"type":"object","additionalProperties":{"type":"string"}})",
    };
    const char* const texts[] = {
        R"({"title":"A headline, with punctuation!","body":"short text","when":"2024-01-02T03:04:05Z"})",
        R"(["alpha beta",12.5,"gamma \"delta\"",-3])",
        R"({"free key":"free value","other":"ünïcödé text"})",
    };
    for (size_t i = 0; i < std::size(schemas); ++i)
        EXPECT_GT(compare_along(compile_json_schema(json::parse(schemas[i])), texts[i]), 5u);
}

TEST_F(ByteRuns, SchemasOfTheSharedSetMatchThePlainWalk) {
    // Every 800th schema of the shared set that compiles: its valid instances' first 60 bytes.
    const std::string command =
        "gzip -dc '" + test::testdata_dir() + "/jsonschema/maskbench-public.jsonl.gz'";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    ASSERT_TRUE(pipe);
    std::string line;
    size_t n = 0, compared = 0;
    for (int c; (c = std::fgetc(pipe.get())) != EOF;) {
        if (c != '\n') {
            line += static_cast<char>(c);
            continue;
        }
        if (n++ % 800 == 0) {
            const json schema_case = json::parse(line);
            std::shared_ptr<const Grammar> g;
            try {
                g = compile_json_schema(schema_case.at("schema"));
            } catch (const GrammarError&) {
            }
            for (const json& t : schema_case.value("tests", json::array()))
                if (g && t.value("valid", false))
                    compared += compare_along(g, compact_json(t.at("data")).substr(0, 60));
        }
        line.clear();
    }
    EXPECT_GT(compared, 100u);
}

}  // namespace
}  // namespace kite::grammar
