// The encoder against llama.cpp's llama-embedding on the same file, for nomic-embed-text-v1.5
// (nomic-bert: rotary positions, SwiGLU) and all-MiniLM-L6-v2 (bert: learned positions,
// biases, GELU): for every text of tests/fixtures/embeddings/{nomic,minilm}.json
// (tools/make-embedding-fixtures.sh), the same tokens and a vector whose cosine similarity
// with the reference is at least 0.9999. Also: several inputs in one ragged batch give each
// the vector it gets alone.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace kite {
namespace {

using nlohmann::json;

double cosine(const float* a, const std::vector<float>& b) {
    double dot = 0, na = 0, nb = 0;
    for (size_t i = 0; i < b.size(); ++i) {
        dot += double(a[i]) * b[i];
        na += double(a[i]) * a[i];
        nb += double(b[i]) * b[i];
    }
    return dot / std::sqrt(na * nb);
}

struct Encoder {
    std::unique_ptr<Model> model;
    std::unique_ptr<Tokenizer> tokenizer;
};

Encoder load(const std::string& id) {
    const std::string path = test::find_real_model(id);
    if (path.empty()) return {};
    Encoder e{Model::load(path), nullptr};
    e.tokenizer = Tokenizer::from_gguf(e.model->file());
    return e;
}

Encoder load_nomic() {
    return load("nomic-embed-v1.5");
}

json fixtures(const std::string& name) {
    std::ifstream in(std::string(KITE_SOURCE_DIR) + "/tests/fixtures/embeddings/" + name);
    return json::parse(in);
}

// Every text of the fixture: the reference's token count (and ids, where the fixture has
// them), and its vector to a cosine of 0.9999.
void expect_matches_llama_cpp(const Encoder& e, const json& cases) {
    std::vector<std::vector<int32_t>> inputs;
    for (const json& c : cases)
        inputs.push_back(e.tokenizer->encode(c["text"].get<std::string>(), true, false));
    ThreadPool pool(2);
    std::vector<float> vectors = e.model->embed(inputs, pool);
    const int64_t n_embd = e.model->config().n_embd;
    for (size_t i = 0; i < cases.size(); ++i) {
        const std::string text = cases[i]["text"].get<std::string>().substr(0, 40);
        EXPECT_EQ(int64_t(inputs[i].size()), cases[i]["tokens"].get<int64_t>()) << text;
        if (cases[i].contains("ids")) {
            EXPECT_EQ(inputs[i], cases[i]["ids"].get<std::vector<int32_t>>()) << text;
        }
        const auto expected = cases[i]["embedding"].get<std::vector<float>>();
        ASSERT_EQ(int64_t(expected.size()), n_embd);
        EXPECT_GE(cosine(&vectors[i * size_t(n_embd)], expected), 0.9999) << text;
    }
}

TEST(Encoder, NomicEmbedMatchesLlamaCppSlow) {
    const Encoder e = load_nomic();
    if (!e.model) GTEST_SKIP() << "nomic-embed-v1.5 is not installed";
    const json cases = fixtures("nomic.json")["cases"];
    ASSERT_GE(cases.size(), 20u);
    expect_matches_llama_cpp(e, cases);
}

// Texts of 3 to 386 tokens (the model reads at most 512).
TEST(Encoder, BertMiniLmMatchesLlamaCpp) {
    const Encoder e = load("all-minilm-l6-v2");
    if (!e.model) GTEST_SKIP() << "all-minilm-l6-v2 is not installed";
    EXPECT_EQ(e.model->config().architecture, "bert");
    EXPECT_EQ(e.model->config().pooling, Pooling::Mean);
    const json cases = fixtures("minilm.json")["cases"];
    ASSERT_GE(cases.size(), 19u);
    expect_matches_llama_cpp(e, cases);
}

// Positions (rotary or learned) restart at each input of the batch.
void expect_ragged_batch_matches_alone(const Encoder& e) {
    const std::vector<std::vector<int32_t>> inputs = {
        e.tokenizer->encode("a short one", true, false),
        e.tokenizer->encode("a somewhat longer input, with more words in it", true, false)};
    ThreadPool pool(2);
    const std::vector<float> together = e.model->embed(inputs, pool);
    const int64_t n_embd = e.model->config().n_embd;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const std::vector<float> alone = e.model->embed({&inputs[i], 1}, pool);
        EXPECT_GE(cosine(&together[i * size_t(n_embd)], alone), 0.999999) << i;
    }
}

TEST(Encoder, RaggedBatchGivesEachInputItsOwnVector) {
    const Encoder e = load_nomic();
    if (!e.model) GTEST_SKIP() << "nomic-embed-v1.5 is not installed";
    expect_ragged_batch_matches_alone(e);
}

TEST(Encoder, BertRaggedBatchGivesEachInputItsOwnVector) {
    const Encoder e = load("all-minilm-l6-v2");
    if (!e.model) GTEST_SKIP() << "all-minilm-l6-v2 is not installed";
    expect_ragged_batch_matches_alone(e);
}

TEST(Encoder, RejectsInputsItCannotEmbed) {
    const Encoder e = load_nomic();
    if (!e.model) GTEST_SKIP() << "nomic-embed-v1.5 is not installed";
    ThreadPool pool(1);
    const int64_t ctx = e.model->config().n_ctx_train;
    const std::vector<std::vector<int32_t>> too_long = {std::vector<int32_t>(size_t(ctx + 1), 101)};
    EXPECT_THROW(e.model->embed(too_long, pool), Error);
    const std::vector<std::vector<int32_t>> empty = {{}};
    EXPECT_THROW(e.model->embed(empty, pool), Error);
    const std::vector<std::vector<int32_t>> bad_id = {{101, 1 << 30, 102}};
    EXPECT_THROW(e.model->embed(bad_id, pool), Error);
}

// Without a pooling (tests/model/decoder_embed_test.cpp: with one).
TEST(Encoder, GenerativeModelCannotEmbedWithoutAPooling) {
    const auto model = Model::load(test::default_model_path());
    EXPECT_FALSE(model->can_embed());
    ThreadPool pool(1);
    const std::vector<std::vector<int32_t>> inputs = {{1, 2, 3}};
    EXPECT_THROW(model->embed(inputs, pool), Error);
}

}  // namespace
}  // namespace kite
