// Kite's forward pass for every architecture it describes, against llama.cpp:
//   tiny random-weight F32 files (tests/fixtures/arch, from tools/make-arch-fixtures.sh):
//     the logits at every prompt position within 1e-3 of the logit range, the greedy
//     continuation identical, through single sequences and through the engine (paged blocks,
//     prefix caching, chunked prefill, batching); Gemma 3's prompt is three sliding windows
//     long;
//   the real files, when installed (...Slow): perplexity within 1% of llama-perplexity's on
//     the same token IDs, teacher-forced top-1 >= 99% where llama.cpp's choice is decisive;
//   bad files: one error naming the file and the key or tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "engine/calibration_text.h"
#include "engine/engine.h"
#include "gguf/gguf_writer.h"
#include "isa_cap.h"
#include "model/model.h"
#include "run_command.h"
#include "test_paths.h"
#include "tools/perplexity.h"

namespace kite {
namespace {

using nlohmann::json;

std::string fixture_dir() {
    return std::string(KITE_SOURCE_DIR) + "/tests/fixtures/arch/";
}

json load_json(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("missing fixture " + path);
    return json::parse(in);
}

// A KV cache of `blocks` blocks of `block_size` and the identity block table.
struct Cache {
    Cache(const Model& m, int64_t blocks, int64_t block_size)
        : kv(m.kv_shape(), TensorType::F32, blocks, block_size), table(blocks) {
        for (int64_t i = 0; i < blocks; ++i) table[i] = static_cast<int32_t>(i);
    }
    KvCache kv;
    std::vector<int32_t> table;
};

// Runs tokens [from, to) of `ids` of one sequence; logits for the rows in [from, to) that
// `want` selects, appended to `out`.
void run(const Model& m, Cache& c, const std::vector<int32_t>& ids, int64_t from, int64_t to,
         bool all_rows, std::vector<std::vector<float>>& out, ThreadPool& pool) {
    const int64_t n = to - from, V = m.config().n_vocab;
    RunState state(m.config(), n, n);
    Batch b;
    for (int64_t i = from; i < to; ++i)
        b.tokens.push_back(ids[i]), b.positions.push_back(i), b.slots.push_back(i);
    b.sequences.push_back({0, n, to, c.table.data(), 0, 0});
    for (int64_t r = all_rows ? 0 : n - 1; r < n; ++r) b.logits_rows.push_back(r);
    const float* logits = m.forward(b, c.kv, state, pool);
    for (size_t r = 0; r < b.logits_rows.size(); ++r)
        out.emplace_back(logits + r * V, logits + (r + 1) * V);
}

int32_t argmax(const std::vector<float>& v) {
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

const char* kTinyModels[] = {
    "llama", "qwen2", "qwen3", "gemma3", "phi3", "llama-rope-freqs", "llama-linear", "llama-yarn"};

class TinyArchTest : public ::testing::TestWithParam<std::tuple<const char*, Isa>> {
  protected:
    void SetUp() override {
        cap_ = std::make_unique<test::ScopedIsaCap>(std::get<1>(GetParam()));
        fixture_ = load_json(fixture_dir() + std::get<0>(GetParam()) + ".json");
        model_ = Model::load(std::string(KITE_SOURCE_DIR) + "/" +
                             fixture_["model"]["file"].get<std::string>());
        ids_ = fixture_["ids"].get<std::vector<int32_t>>();
        greedy_ = fixture_["greedy"].get<std::vector<int32_t>>();
    }

    std::unique_ptr<test::ScopedIsaCap> cap_;
    json fixture_;
    std::unique_ptr<Model> model_;
    std::vector<int32_t> ids_, greedy_;
    ThreadPool pool_{2};
};

// Every position, so that Gemma 3's windowed layers are checked where the window cuts off
// earlier tokens (positions 8 and up), across KV blocks of 4 (windows start mid-block).
TEST_P(TinyArchTest, LogitsAtEveryPositionMatchLlamaCpp) {
    const int64_t n = static_cast<int64_t>(ids_.size());
    Cache cache(*model_, (n + 3) / 4, 4);
    std::vector<std::vector<float>> ours;
    run(*model_, cache, ids_, 0, n, true, ours, pool_);
    double worst = 0;
    for (int64_t p = 0; p < n; ++p) {
        const std::vector<float> theirs = fixture_["logits"][p];
        const auto [lo, hi] = std::minmax_element(theirs.begin(), theirs.end());
        for (size_t v = 0; v < theirs.size(); ++v)
            worst = std::max(worst, double(std::fabs(ours[p][v] - theirs[v]) / (*hi - *lo)));
    }
    EXPECT_LT(worst, 1e-3);
}

// Prefill, then one decode step per token.
TEST_P(TinyArchTest, GreedyContinuationMatchesLlamaCpp) {
    std::vector<int32_t> ids = ids_;
    const int64_t total = static_cast<int64_t>(ids.size() + greedy_.size());
    Cache cache(*model_, (total + 3) / 4, 4);
    std::vector<std::vector<float>> logits;
    run(*model_, cache, ids, 0, static_cast<int64_t>(ids.size()), false, logits, pool_);
    std::vector<int32_t> ours;
    while (ours.size() < greedy_.size()) {
        ours.push_back(argmax(logits.back()));
        ids.push_back(ours.back());
        const int64_t n = static_cast<int64_t>(ids.size());
        run(*model_, cache, ids, n - 1, n, false, logits, pool_);
    }
    EXPECT_EQ(ours, greedy_);
}

// Three sequences at once through the engine: the same prompt twice (the second reuses the
// first's cached blocks) and once more cut into prefill chunks of 5 tokens.
TEST_P(TinyArchTest, EngineBatchesAndPrefixCachingMatchLlamaCpp) {
    std::unique_ptr<Tokenizer> tokenizer = Tokenizer::from_gguf(model_->file());
    EngineConfig cfg;
    cfg.threads = 2;
    cfg.context_length = 64;
    cfg.max_sequences = 3;
    cfg.kv_type = TensorType::F32;
    cfg.block_size = 4;
    cfg.max_batch_tokens = 5;
    Engine engine(*model_, *tokenizer, cfg);
    GenerationParams g;
    g.sampling.temperature = 0;
    g.max_tokens = static_cast<int64_t>(greedy_.size());
    g.ignore_eos = true;
    std::map<int64_t, std::vector<int32_t>> ours;
    for (int i = 0; i < 3; ++i) ours[engine.submit(ids_, g)];
    while (engine.has_work())
        for (const TokenEvent& ev : engine.step()) ours[ev.seq_id].push_back(ev.token);
    for (const auto& [id, tokens] : ours) EXPECT_EQ(tokens, greedy_) << "sequence " << id;
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, TinyArchTest,
                         ::testing::Combine(::testing::ValuesIn(kTinyModels),
                                            ::testing::ValuesIn(test::supported_isas())),
                         [](const auto& info) {
                             std::string s = std::string(std::get<0>(info.param)) + "_" +
                                             isa_name(std::get<1>(info.param));
                             std::replace(s.begin(), s.end(), '-', '_');
                             return s;
                         });

TEST(Architecture, GemmaSlidingWindowOnFiveOfEverySixLayers) {
    auto f = GgufFile::open(fixture_dir() + "gemma3.gguf");
    const ModelConfig c = read_model_config(*f);
    ASSERT_EQ(c.layers.size(), 6u);
    for (int64_t l = 0; l < 6; ++l) {
        const bool global = l == 5;
        EXPECT_EQ(c.layers[l].window, global ? 0 : 8) << l;
        EXPECT_EQ(c.layers[l].rope.freq_base, global ? 1e6f : 1e4f) << l;
    }
    EXPECT_FLOAT_EQ(static_cast<float>(c.attention_scale), 0.25f);  // 1/sqrt(head_dim 16)
}

// --- bad files --------------------------------------------------------------------------

// A copy of a fixture file with its metadata and tensors passed through `edit_key` and
// `edit_tensors` (which may drop, change or add entries).
struct Edits {
    std::function<bool(std::string_view key, GgufWriter& w)> key;  // true: handled
    std::vector<std::string> drop_tensors;
    std::vector<std::pair<std::string, std::vector<uint64_t>>> add_tensors;  // F32 zeros
};

std::string edited_copy(const std::string& name, const Edits& e) {
    auto src = GgufFile::open(fixture_dir() + name + ".gguf");
    GgufWriter w;
    for (const auto& [key, value] : src->metadata())
        if (!(e.key && e.key(key, w))) w.add_raw(key, value);
    for (const GgufTensor& t : src->tensors()) {
        if (std::find(e.drop_tensors.begin(), e.drop_tensors.end(), t.name) != e.drop_tensors.end())
            continue;
        w.add_tensor(t.name, t.type(), std::span(t.dims.data(), t.n_dims),
                     std::span(t.data, t.n_bytes));
    }
    for (const auto& [tname, dims] : e.add_tensors) {
        uint64_t n = 1;
        for (uint64_t d : dims) n *= d;
        std::vector<uint8_t> zeros(n * sizeof(float));
        w.add_tensor(tname, TensorType::F32, dims, zeros);
    }
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("kite_arch_" + std::to_string(::getpid()) + "_" + name + ".gguf"))
                                 .string();
    w.write_file(path);
    return path;
}

Edits set_key(std::string target, std::function<void(GgufWriter&)> write) {
    return {[=](std::string_view key, GgufWriter& w) {
                if (key != target) return false;
                write(w);
                return true;
            },
            {},
            {}};
}

void expect_load_error(const std::string& name, const Edits& e, const std::string& needle) {
    const std::string path = edited_copy(name, e);
    try {
        Model::load(path);
        ADD_FAILURE() << "loaded despite: " << needle;
    } catch (const Error& err) {
        const std::string what = err.what();
        EXPECT_NE(what.find(needle), std::string::npos) << what;
        EXPECT_NE(what.find(path), std::string::npos) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
    std::filesystem::remove(path);
}

TEST(Architecture, RejectsBadFilesNamingKeyOrTensor) {
    expect_load_error("qwen2",
                      set_key("general.architecture",
                              [](GgufWriter& w) { w.add_string("general.architecture", "mamba"); }),
                      "unknown architecture 'mamba'");
    expect_load_error("qwen2", {nullptr, {"blk.1.attn_q.bias"}, {}},
                      "tensor 'blk.1.attn_q.bias' is missing");
    expect_load_error("gemma3", {nullptr, {}, {{"blk.0.attn_q.bias", {64}}}},
                      "tensor 'blk.0.attn_q.bias' is not used by architecture 'gemma3'");
    expect_load_error("qwen3", {nullptr, {}, {{"blk.2.attn_norm.weight", {32}}}},
                      "tensor 'blk.2.attn_norm.weight' is not used");
    Edits misshapen{nullptr, {"blk.0.attn_k.weight"}, {{"blk.0.attn_k.weight", {32, 8}}}};
    expect_load_error("llama", misshapen, "tensor 'blk.0.attn_k.weight' has shape [32, 8]");
    Edits flat_norm{nullptr, {"blk.0.attn_q_norm.weight"}, {{"blk.0.attn_q_norm.weight", {8}}}};
    expect_load_error("qwen3", flat_norm, "tensor 'blk.0.attn_q_norm.weight' has 8 elements");

    for (float bad : {std::nanf(""), 0.0f, -1.0f})
        expect_load_error("qwen2",
                          set_key("qwen2.rope.freq_base",
                                  [=](GgufWriter& w) { w.add_f32("qwen2.rope.freq_base", bad); }),
                          "'qwen2.rope.freq_base'");
    expect_load_error(
        "qwen2",
        set_key("qwen2.attention.layer_norm_rms_epsilon",
                [](GgufWriter& w) { w.add_f32("qwen2.attention.layer_norm_rms_epsilon", 0.0f); }),
        "'qwen2.attention.layer_norm_rms_epsilon' = 0 is out of range");
    expect_load_error("qwen3",
                      set_key("qwen3.attention.head_count_kv",
                              [](GgufWriter& w) { w.add_u32("qwen3.attention.head_count_kv", 3); }),
                      "'qwen3.attention.head_count' = 4 is not a multiple of");
    expect_load_error("gemma3",
                      set_key("gemma3.attention.key_length",
                              [](GgufWriter& w) {
                                  w.add_u32("gemma3.attention.key_length", 16);
                                  w.add_u32("gemma3.rope.dimension_count", 32);
                              }),
                      "'gemma3.rope.dimension_count' = 32 must be even and at most");
    expect_load_error(
        "llama-yarn",
        set_key("llama.rope.scaling.type",
                [](GgufWriter& w) { w.add_string("llama.rope.scaling.type", "dynamic"); }),
        "'llama.rope.scaling.type' = 'dynamic'");
    expect_load_error(
        "gemma3",
        set_key("gemma3.attention.sliding_window",
                [](GgufWriter& w) { w.add_i32("gemma3.attention.sliding_window", -8); }),
        "'gemma3.attention.sliding_window' = -8 is out of range");
}

TEST(Architecture, CliSaysWhatIsWrongInOneLine) {
    const std::string path = edited_copy(
        "qwen2", set_key("qwen2.rope.freq_base",
                         [](GgufWriter& w) { w.add_f32("qwen2.rope.freq_base", std::nanf("")); }));
    const test::CommandResult r = test::run_kite("info -m " + path);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("'qwen2.rope.freq_base' = nan is out of range"), std::string::npos)
        << r.err;
    std::filesystem::remove(path);
}

// --- real files ---------------------------------------------------------------------------

class RealFileTest : public ::testing::TestWithParam<const char*> {};

std::string real_case_name(const ::testing::TestParamInfo<const char*>& info) {
    std::string s = info.param;
    std::replace_if(
        s.begin(), s.end(), [](char c) { return !std::isalnum(c); }, '_');
    return s;
}

TEST_P(RealFileTest, PerplexityAndTeacherForcedTop1MatchLlamaCppSlow) {
    const json fx = load_json(fixture_dir() + "real-" + GetParam() + ".json");
    const std::string path = test::find_real_model(GetParam());
    if (path.empty()) GTEST_SKIP() << GetParam() << " is not installed";
    ASSERT_EQ(std::filesystem::file_size(path), fx["model"]["bytes"].get<uint64_t>())
        << path << " is not the file the fixture was made from";
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_ptr<Model> model = Model::load(path);
    ThreadPool pool(2);
    PerplexityOptions o;
    o.n_ctx = fx["n_ctx"];
    o.n_batch = o.n_ctx;
    o.bos = fx["bos"];
    const std::vector<int32_t> ids = fx["ids"];
    const PerplexityResult r = perplexity(*model, ids, o, pool);
    ASSERT_EQ(r.n_windows, static_cast<int64_t>(fx["windows"].size()));
    int64_t decisive = 0, agree = 0;
    for (int64_t w = 0; w < r.n_windows; ++w)
        for (int64_t j = 0; j < o.n_ctx - 1; ++j)
            if (fx["windows"][w]["top2_gap"][j].get<double>() >= 0.25)
                decisive++, agree += r.argmax[w * (o.n_ctx - 1) + j] ==
                                     fx["windows"][w]["argmax"][j].get<int32_t>();
    const double ppl_ref = fx["llama_perplexity"];
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf(
        "[%s] perplexity %.4f vs llama.cpp %.4f; top-1 %lld/%lld at decisive positions; "
        "%.1f s\n",
        GetParam(), r.ppl, ppl_ref, (long long)agree, (long long)decisive, seconds);
    EXPECT_LT(std::fabs(r.ppl - ppl_ref) / ppl_ref, 0.01);
    EXPECT_GE(double(agree), 0.99 * double(decisive));
}

// Eight 256-token windows (tools/make-arch-fixtures.sh): with the two 64-token windows used
// before, perturbations as small as f16 vs f32 KV moved the quantized files' perplexity by
// about 1% either way, on both engines.
// Quantized keys on a model whose keys are hard to quantize: Qwen2's K biases leave a few
// channels far larger than the rest (llama.cpp's own q8_0 cache costs this model +5% perplexity
// on GPL-3 and q4_0 several times the perplexity). Calibrated keys (kv/key_calibration.h) keep
// q8_0 within 1% of f16 and q4_0 within 15% on the fixture's windows.
TEST(RealFileKv, CalibratedKeysKeepQwenPerplexitySlow) {
    const char* id = "qwen2.5-coder-0.5b";
    const std::string path = test::find_real_model(id);
    if (path.empty()) GTEST_SKIP() << id << " is not installed";
    const json fx = load_json(fixture_dir() + "real-" + id + ".json");
    std::unique_ptr<Model> model = Model::load(path);
    std::unique_ptr<Tokenizer> tokenizer = Tokenizer::from_gguf(model->file());
    ThreadPool pool(2);
    const std::vector<int32_t> ids = fx["ids"];
    auto ppl = [&](KvTypes types) {
        PerplexityOptions o;
        o.n_ctx = fx["n_ctx"];
        o.n_batch = o.n_ctx;
        o.bos = fx["bos"];
        o.kv_type = types;
        o.calibration_tokens = calibration_tokens(*tokenizer);
        return perplexity(*model, ids, o, pool).ppl;
    };
    const double f16 = ppl(TensorType::F16), q8 = ppl(TensorType::Q8_0), q4 = ppl(TensorType::Q4_0);
    std::printf("[%s] perplexity f16 %.4f, q8_0 %.4f (%+.2f%%), q4_0 %.4f (%+.2f%%)\n", id, f16, q8,
                100 * (q8 / f16 - 1), q4, 100 * (q4 / f16 - 1));
    EXPECT_LT(std::fabs(q8 / f16 - 1), 0.01);
    EXPECT_LT(q4 / f16 - 1, 0.15);
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, RealFileTest,
                         ::testing::Values("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b",
                                           "gemma3-270m"),
                         real_case_name);

}  // namespace
}  // namespace kite
