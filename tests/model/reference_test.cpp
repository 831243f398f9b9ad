// Kite against llama.cpp on the same GGUF files: fixtures written by
// tools/make-reference-fixtures.sh from llama.cpp's own logits (f16 KV cache on both sides).
//   F32 variant: greedy continuations identical (except after a near tie), first-step
//                logits within 1e-3 of the logit range.
//   Q4_1 default model and Q8_0 variant: perplexity within 1% of llama.cpp's, teacher-forced
//                top-1 agreement >= 99.5% where llama.cpp's choice is clear (top-2 gap
//                >= 0.5 logits), >= 98.5% where it is decisive (>= 0.25) and >= 95% overall
//                (see the test for why not 99%).
//   Q4_K_M and Q5_K_M variants: the same teacher-forced checks (their fixtures hold only
//                that run), and perplexity within 1% of the real llama-perplexity's.
//   Gemma 3 270M in F32 (its tokenizer adds BOS): `kite perplexity` within 0.05% of the real
//                llama-perplexity's at two context sizes.
// Each runs on every SIMD instruction set the CPU has (KITE_ISA levels), as whole generations,
// hence the Slow suffix (release build only). The scalar reference kernels take minutes per
// generation, so on them only the first-step logits of the first few prompts are compared
// (every SIMD kernel is also compared with them directly in packed_gemm_test and
// kernels_test).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <tuple>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "core/mapped_file.h"
#include "engine/engine.h"
#include "isa_cap.h"
#include "run_command.h"
#include "sha256.h"
#include "test_paths.h"
#include "tools/perplexity.h"

namespace kite {
namespace {

using nlohmann::json;

json load_fixture(const std::string& name) {
    std::ifstream in(std::string(KITE_SOURCE_DIR) + "/tests/fixtures/reference/" + name + ".json");
    if (!in) throw std::runtime_error("missing fixture " + name);
    return json::parse(in);
}

std::string model_path(const json& fixture) {
    return std::string(KITE_SOURCE_DIR) + "/" + fixture["model"]["file"].get<std::string>();
}

// Next-token logits after `tokens`, from one prefill over an empty cache.
std::vector<float> last_logits(const Model& model, const std::vector<int32_t>& tokens,
                               ThreadPool& pool) {
    const int64_t n = static_cast<int64_t>(tokens.size()), block = 16;
    KvCache kv(model.kv_shape(), TensorType::F16, (n + block - 1) / block, block);
    std::vector<int32_t> table((n + block - 1) / block);
    for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
    RunState state(model.config(), n, 1);
    Batch b;
    for (int64_t i = 0; i < n; ++i)
        b.tokens.push_back(tokens[i]), b.positions.push_back(i), b.slots.push_back(i);
    b.sequences.push_back({0, n, n, table.data(), 0, 0});
    b.logits_rows.push_back(n - 1);
    const float* logits = model.forward(b, kv, state, pool);
    return {logits, logits + model.config().n_vocab};
}

std::pair<float, float> top2(const std::vector<float>& logits) {
    std::vector<float> v = logits;
    std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<float>());
    return {v[0], v[1]};
}

constexpr size_t kScalarPrompts = 3;

// The instruction-set levels with SIMD kernels that this CPU runs.
std::vector<Isa> simd_isas() {
    std::vector<Isa> isas = test::supported_isas();
    std::erase(isas, Isa::Scalar);
    return isas;
}

// A fixture's model, loaded with the kernels of one instruction set.
class ReferenceTest : public ::testing::TestWithParam<std::tuple<std::string, Isa>> {
  protected:
    void SetUp() override {
        name_ = std::get<0>(GetParam());
        cap_ = std::make_unique<test::ScopedIsaCap>(std::get<1>(GetParam()));
        fixture_ = load_fixture(name_);
        const std::string path = model_path(fixture_);
        {
            MappedFile file(path);
            ASSERT_EQ(test::sha256_hex(file.bytes()),
                      fixture_["model"]["sha256"].get<std::string>())
                << path << " differs from the file the fixture was made from";
        }
        model_ = Model::load(path);
        tokenizer_ = Tokenizer::from_gguf(model_->file());
    }

    const char* name() const { return name_.c_str(); }
    bool scalar() const { return std::get<1>(GetParam()) == Isa::Scalar; }

    std::string name_;
    std::unique_ptr<test::ScopedIsaCap> cap_;
    json fixture_;
    std::unique_ptr<Model> model_;
    std::unique_ptr<Tokenizer> tokenizer_;
    ThreadPool pool_{2};
};

// Tokenization does not depend on the kernels: these two run with the best instruction set.
using ReferenceTokensTest = ReferenceTest;

TEST_P(ReferenceTokensTest, PromptTokensMatchSlow) {
    for (const json& p : fixture_["prompts"]) {
        const std::vector<int32_t> expected = p["ids"];
        EXPECT_EQ(tokenizer_->encode(p["text"].get<std::string>(), true, true), expected)
            << p["name"];
    }
}

TEST_P(ReferenceTest, FirstStepLogitsSlow) {
    const bool exact = name_ == "default-f32";
    double worst = 0;
    int top1_same = 0, n = 0;
    const size_t n_prompts = scalar() ? kScalarPrompts : fixture_["prompts"].size();
    for (size_t i = 0; i < std::min(n_prompts, fixture_["prompts"].size()); ++i) {
        const json& p = fixture_["prompts"][i];
        const json& fs = p["first_step"];
        const std::vector<float> logits = last_logits(*model_, p["ids"], pool_);
        const double range = fs["max_logit"].get<double>() - fs["min_logit"].get<double>();
        for (size_t i = 0; i < fs["top10_ids"].size(); ++i) {
            const double diff = std::fabs(logits[fs["top10_ids"][i].get<int>()] -
                                          fs["top10_logits"][i].get<double>());
            worst = std::max(worst, diff / range);
        }
        top1_same += std::max_element(logits.begin(), logits.end()) - logits.begin() ==
                     fs["top10_ids"][0].get<int>();
        n++;
    }
    std::printf(
        "[%s] first-step top-10 logits: worst |diff| = %.2e of the logit range; top-1 same for "
        "%d/%d\n",
        name(), worst, top1_same, n);
    if (exact)
        EXPECT_LT(worst, 1e-3);
    else
        EXPECT_LT(worst, 5e-2);  // quantized activations differ between engines' kernels
}

// Whole generations run on the SIMD levels only: the scalar kernels would take minutes.
using ReferenceSimdTest = ReferenceTest;

TEST_P(ReferenceSimdTest, GreedyContinuationsSlow) {
    const json& prompts = fixture_["prompts"];
    EngineConfig cfg;
    cfg.threads = 2;
    cfg.context_length = 512;
    cfg.max_sequences = static_cast<int64_t>(prompts.size());
    Engine engine(*model_, *tokenizer_, cfg);
    GenerationParams g;
    g.sampling.temperature = 0;
    g.max_tokens = 64;
    g.ignore_eos = true;
    std::map<int64_t, size_t> index;
    for (size_t i = 0; i < prompts.size(); ++i) index[engine.submit(prompts[i]["ids"], g)] = i;
    std::vector<std::vector<int32_t>> ours(prompts.size());
    while (engine.has_work())
        for (const TokenEvent& ev : engine.step()) ours[index[ev.seq_id]].push_back(ev.token);

    int identical = 0, near_ties = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
        const std::vector<int32_t> theirs = prompts[i]["greedy"]["ids"];
        auto [a, b] = std::mismatch(ours[i].begin(), ours[i].end(), theirs.begin());
        if (a == ours[i].end()) {
            identical++;
            continue;
        }
        // Where the continuations part, were the top two candidates a near tie?
        const size_t k = static_cast<size_t>(a - ours[i].begin());
        std::vector<int32_t> context = prompts[i]["ids"];
        context.insert(context.end(), theirs.begin(), theirs.begin() + static_cast<long>(k));
        const auto [ours1, ours2] = top2(last_logits(*model_, context, pool_));
        const json& t2 = prompts[i]["greedy"]["top2_logits"][k];
        const double their_gap = t2[0].get<double>() - t2[1].get<double>();
        const bool tie = ours1 - ours2 < 1e-3 || their_gap < 1e-3;
        near_ties += tie;
        std::printf("[%s] prompt %s: parts at step %zu (gap ours %.5f, llama.cpp %.5f)\n", name(),
                    prompts[i]["name"].get<std::string>().c_str(), k, ours1 - ours2, their_gap);
        if (name_ == "default-f32") {
            EXPECT_TRUE(tie) << prompts[i]["name"] << " parts at step " << k;
        }
    }
    std::printf("[%s] greedy: %d/%zu identical, %d part at a near tie\n", name(), identical,
                prompts.size(), near_ties);
}

// Teacher-forced over the fixture's windows: perplexity within 1% of llama.cpp's (from its
// logits on the same windows) and top-1 agreement with its argmax, >= 99.5% where llama.cpp's
// choice is clear and >= 98.5% where it is decisive (for F32: >= 99% everywhere).
void expect_teacher_forced_agreement(const char* name, const json& fixture, const Model& model,
                                     ThreadPool& pool, bool exact, double min_overall = 0.95) {
    const json& tf = fixture["teacher_forced"];
    const std::vector<int32_t> ids = tf["ids"];
    PerplexityOptions o;
    o.n_ctx = tf["n_ctx"];
    o.n_batch = o.n_ctx;
    PerplexityResult r = perplexity(model, ids, o, pool);
    ASSERT_EQ(r.n_windows, tf["n_windows"].get<int64_t>());
    // Decisive positions: llama.cpp's best token leads the runner-up by >= 0.25 logits; clear
    // ones by >= 0.5.
    int64_t agree = 0, total = 0, decisive_agree = 0, decisive = 0, clear_agree = 0, clear = 0;
    for (int64_t w = 0; w < r.n_windows; ++w) {
        const json& theirs = tf["windows"][w]["argmax"];
        const json& gap = tf["windows"][w]["top2_gap"];
        for (int64_t j = 0; j < o.n_ctx - 1; ++j, ++total) {
            const bool same = r.argmax[w * (o.n_ctx - 1) + j] == theirs[j].get<int32_t>();
            agree += same;
            if (gap[j].get<double>() >= 0.25) decisive++, decisive_agree += same;
            if (gap[j].get<double>() >= 0.5) clear++, clear_agree += same;
        }
    }
    const double agreement = double(agree) / total;
    const double decisive_agreement = double(decisive_agree) / decisive;
    const double clear_agreement = double(clear_agree) / clear;
    const double ppl_ref = tf["perplexity"]["ppl"];
    const double rel = std::fabs(r.ppl - ppl_ref) / ppl_ref;
    std::printf(
        "[%s] teacher-forced top-1 agreement %.2f%% (%lld/%lld), %.2f%% where llama.cpp's top-2 "
        "gap >= "
        "0.25 (%lld/%lld), %.2f%% where >= 0.5 (%lld/%lld); perplexity %.4f vs llama.cpp %.4f "
        "(%.3f%%)\n",
        name, 100 * agreement, (long long)agree, (long long)total, 100 * decisive_agreement,
        (long long)decisive_agree, (long long)decisive, 100 * clear_agreement,
        (long long)clear_agree, (long long)clear, r.ppl, ppl_ref, 100 * rel);
    EXPECT_LT(rel, 0.01);
    if (exact) {
        EXPECT_GE(agreement, 0.99);
    } else {
        // With 8-bit activations the last bits of any sum decide how the next layer's inputs
        // round, so two correct engines (or Kite's own scalar and SIMD paths) drift apart by
        // ~1-2% of the logit range and near ties flip. Decisive positions must agree, clear ones
        // all but a few in a thousand. How close to a tie a flip comes is itself noise: on the
        // Q5_K_M file a change of 2e-7 in the softmax's exp moved decisive agreement from 99.04%
        // to 98.80% (clear: 99.71% both); over every level and attention kernel the files
        // measured 98.8-99.9% decisive and 99.7-100% clear.
        EXPECT_GE(agreement, min_overall);
        EXPECT_GE(decisive_agreement, 0.985);
        EXPECT_GE(clear_agreement, 0.995);
    }
    EXPECT_EQ(r.n_scored, tf["perplexity"]["count"].get<int64_t>());
    // The real llama-perplexity on the same file and text, where the fixture has it.
    const json& lp = tf["llama_perplexity"];
    if (lp.is_object()) {
        EXPECT_LT(std::fabs(r.ppl - lp["ppl"].get<double>()) / lp["ppl"].get<double>(), 0.01)
            << lp["output_line"];
    }
}

TEST_P(ReferenceSimdTest, TeacherForcedAgreementAndPerplexitySlow) {
    expect_teacher_forced_agreement(name(), fixture_, *model_, pool_, name_ == "default-f32");
}

// The K-quant variants (tools/make-kquant-reference-fixtures.sh: the default model's Q4_K_M
// and Q5_K_M, every tensor as llama-quantize writes it): Q4_K, Q5_K, Q6_K, Q5_0, Q5_1 and
// Q8_0 matrices in one forward pass, teacher-forced over four 256-token windows (as the
// other fixtures). An earlier single 64-token window was too short to compare engines: its
// perplexity moved by 10% between Kite's own AVX2 and AVX-512 kernels. Measured: perplexity
// 0.16-0.66% from llama.cpp's, top-1 99.3-99.8% at decisive positions, 93.9-96.1% overall
// (these files requantize activations for more kinds of blocks, so near ties flip more
// often: overall agreement is asked to be >= 93% here, clear and decisive positions as above).
using ReferenceKQuantTest = ReferenceTest;

TEST_P(ReferenceKQuantTest, TeacherForcedAgreementAndPerplexitySlow) {
    expect_teacher_forced_agreement(name(), fixture_, *model_, pool_, false, 0.93);
}

// The fixture's text is the start of a file every Debian system has; our tokenizer must
// cut it exactly as llama.cpp did.
TEST_P(ReferenceTokensTest, TeacherForcedTextTokenizesTheSameSlow) {
    const json& tf = fixture_["teacher_forced"];
    std::ifstream in(tf["text_file"].get<std::string>(), std::ios::binary);
    if (!in) GTEST_SKIP() << "no " << tf["text_file"] << " on this system";
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!text.empty() && text.back() == '\n') text.pop_back();  // as llama-perplexity reads it
    std::vector<int32_t> ours = tokenizer_->encode(text, false, false);
    const std::vector<int32_t> theirs = tf["ids"];
    ASSERT_GE(ours.size(), theirs.size());
    ours.resize(theirs.size());
    EXPECT_EQ(ours, theirs);
}

// `kite perplexity` as a user runs it, on a model whose tokenizer adds BOS, against the real
// llama-perplexity on the same file, text and flags at two context sizes
// (tools/make-bos-perplexity-fixture.sh). llama.cpp tokenizes the text with BOS first and cuts
// its windows from that; a Kite that tokenized without BOS scored windows one token later, 2.3%
// off at both sizes here. Gemma 3 270M in F32 (scripts/make-variants.sh): nothing is
// requantized at run time, so the two engines agree to 0.006% (0.002% with KITE_ISA=avx2); the
// installed Q4_K_M file is 0.5-1.2% away, too far to see the windows. Best instruction set only.
TEST(LlamaPerplexityBos, WindowsHoldTheSameTokensSlow) {
    const json fx = load_fixture("gemma3-270m-perplexity");
    const std::string path = model_path(fx), text = fx["text_file"];
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is missing (make-variants.sh)";
    if (!std::filesystem::exists(text)) GTEST_SKIP() << "no " << text << " on this system";
    ASSERT_EQ(test::sha256_hex(MappedFile(text).bytes()), fx["text_sha256"].get<std::string>());
    ASSERT_EQ(test::sha256_hex(MappedFile(path).bytes()), fx["model"]["sha256"].get<std::string>())
        << path << " differs from the file the fixture was made from";
    for (const json& run : fx["runs"]) {
        const int64_t n_ctx = run["n_ctx"];
        const test::CommandResult r =
            test::run_kite(fmt::format("perplexity -m {} -f {} -c {} --chunks {} -t 2", path, text,
                                       n_ctx, run["chunks"].get<int64_t>()));
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const std::string key = "Final estimate: PPL = ";
        const size_t at = r.out.find(key);
        ASSERT_NE(at, std::string::npos) << r.out;
        const double ours = std::stod(r.out.substr(at + key.size()));
        const double theirs = run["ppl"], rel = std::fabs(ours - theirs) / theirs;
        std::printf(
            "[gemma3-270m f32] ctx %lld: perplexity %.4f vs llama-perplexity %.4f (%.3f%%)\n",
            (long long)n_ctx, ours, theirs, 100 * rel);
        EXPECT_LT(rel, 5e-4) << "ctx " << n_ctx << ": " << r.out;
    }
}

const auto kFixtures = ::testing::Values("default", "default-f32", "default-q8_0");

std::string case_name(const std::string& fixture, Isa isa) {
    std::string s = fixture + "_" + isa_name(isa);
    std::replace(s.begin(), s.end(), '-', '_');
    return s;
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, ReferenceTest,
                         ::testing::Combine(kFixtures, ::testing::ValuesIn(test::supported_isas())),
                         [](const auto& info) {
                             return case_name(std::get<0>(info.param), std::get<1>(info.param));
                         });

INSTANTIATE_TEST_SUITE_P(LlamaCpp, ReferenceSimdTest,
                         ::testing::Combine(kFixtures, ::testing::ValuesIn(simd_isas())),
                         [](const auto& info) {
                             return case_name(std::get<0>(info.param), std::get<1>(info.param));
                         });

INSTANTIATE_TEST_SUITE_P(LlamaCpp, ReferenceKQuantTest,
                         ::testing::Combine(::testing::Values("default-q4_k_m", "default-q5_k_m"),
                                            ::testing::ValuesIn(simd_isas())),
                         [](const auto& info) {
                             return case_name(std::get<0>(info.param), std::get<1>(info.param));
                         });

INSTANTIATE_TEST_SUITE_P(LlamaCpp, ReferenceTokensTest,
                         ::testing::Combine(kFixtures, ::testing::Values(detected_isa())),
                         [](const auto& info) {
                             return case_name(std::get<0>(info.param), std::get<1>(info.param));
                         });

}  // namespace
}  // namespace kite
