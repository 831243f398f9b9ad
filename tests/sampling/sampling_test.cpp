// The sampler: greedy, penalties, bias, seeds, parameter validation, logprobs, and
// chi-square tests that the drawn tokens follow the distribution the chain defines.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "chi_square.h"
#include "core/error.h"
#include "sampling/dry.h"
#include "sampling/logprobs.h"
#include "sampling/penalties.h"
#include "sampling/sampler.h"
#include "sampling/sampling_params.h"

namespace kite {
namespace {

using testing::chi_square;
using testing::chi_square_p_value;

// --- The chi-square helper itself, against table values. -------------------------------

TEST(SamplingChiSquare, SurvivalFunctionMatchesTables) {
    EXPECT_NEAR(chi_square_p_value(20.515, 5), 0.001, 2e-6);
    EXPECT_NEAR(chi_square_p_value(3.841459, 1), 0.05, 1e-6);
    EXPECT_NEAR(chi_square_p_value(18.307, 10), 0.05, 1e-5);
    EXPECT_NEAR(chi_square_p_value(43.773, 30), 0.05, 1e-5);
    EXPECT_NEAR(chi_square_p_value(124.342, 100), 0.05, 1e-5);
    EXPECT_NEAR(chi_square_p_value(3.940, 10), 0.95, 1e-4);  // series branch (x < a + 1)
    EXPECT_NEAR(chi_square_p_value(1.145, 5), 0.95, 1e-4);
    for (double x : {0.1, 1.0, 2.0, 7.5, 30.0}) {  // df = 2: exactly exp(-x / 2)
        EXPECT_NEAR(chi_square_p_value(x, 2), std::exp(-x / 2), 1e-12) << x;
    }
    EXPECT_EQ(chi_square_p_value(0, 3), 1.0);
}

// --- A reference distribution, straight from the definitions, in double. ---------------

std::vector<double> softmax(const std::vector<double>& logits) {
    double max = -INFINITY;
    for (double l : logits) max = std::max(max, l);
    std::vector<double> p(logits.size());
    double sum = 0;
    for (size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp(logits[i] - max);
    for (double& x : p) x /= sum;
    return p;
}

// Softmax over the kept tokens only; the others get probability 0.
std::vector<double> softmax_over(const std::vector<double>& logits, const std::vector<bool>& keep) {
    std::vector<double> kept_logits;
    for (size_t i = 0; i < logits.size(); ++i) {
        if (keep[i]) kept_logits.push_back(logits[i]);
    }
    std::vector<double> kept_p = softmax(kept_logits), p(logits.size(), 0.0);
    for (size_t i = 0, j = 0; i < logits.size(); ++i) {
        if (keep[i]) p[i] = kept_p[j++];
    }
    return p;
}

// Applies top-k, top-p, min-p (at temperature 1) then temperature, as the sampler documents.
std::vector<double> reference(const std::vector<double>& logits, const SamplingParams& sp) {
    const size_t n = logits.size();
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    std::vector<bool> keep(n, true);
    if (sp.top_k > 0) {
        for (size_t r = static_cast<size_t>(sp.top_k); r < n; ++r) keep[order[r]] = false;
    }
    if (sp.top_p < 1) {
        std::vector<double> p = softmax_over(logits, keep);
        double cum = 0;
        bool reached = false;
        for (size_t i : order) {
            if (!keep[i]) continue;
            if (reached) keep[i] = false;
            cum += p[i];
            reached = reached || cum >= sp.top_p;
        }
    }
    if (sp.min_p > 0) {
        std::vector<double> p = softmax_over(logits, keep);
        const double p_max = *std::max_element(p.begin(), p.end());
        for (size_t i = 0; i < n; ++i) keep[i] = keep[i] && p[i] >= sp.min_p * p_max;
    }
    std::vector<double> scaled(n);
    for (size_t i = 0; i < n; ++i) scaled[i] = logits[i] / sp.temperature;
    return softmax_over(scaled, keep);
}

// Draws `draws` tokens from fresh copies of logits and checks them against target: a
// chi-square p-value above 0.001, and no token outside the target's support ever drawn.
void expect_distribution(const char* name, const std::vector<float>& logits,
                         const SamplingParams& sp, const std::vector<double>& target,
                         const std::vector<int32_t>& history = {}, int64_t draws = 100000) {
    Sampler sampler(sp, static_cast<int32_t>(logits.size()));
    std::vector<int64_t> counts(logits.size(), 0);
    std::vector<float> row(logits.size());
    for (int64_t d = 0; d < draws; ++d) {
        row = logits;
        const int32_t t = sampler.sample(row, history);
        ASSERT_GE(t, 0);
        ASSERT_LT(t, static_cast<int32_t>(logits.size()));
        ++counts[static_cast<size_t>(t)];
    }
    for (size_t i = 0; i < target.size(); ++i) {
        if (target[i] == 0) {
            EXPECT_EQ(counts[i], 0) << name << ": truncated token " << i;
        } else {  // Pearson's approximation needs enough expected counts in every bin
            ASSERT_GE(target[i] * static_cast<double>(draws), 5.0) << name << ": token " << i;
        }
    }
    const auto r = chi_square(counts, target, draws);
    std::printf("[ chi2     ] %-28s chi2 = %8.3f  df = %3d  p = %.4f\n", name, r.statistic, r.df,
                r.p_value);
    EXPECT_GT(r.df, 0) << name << ": a one-token support tests nothing";
    EXPECT_GT(r.p_value, 0.001) << name << ": chi2 = " << r.statistic << ", df = " << r.df;
}

const std::vector<float> kLogits = {1.2f, -0.4f, 2.1f, 0.3f, -1.5f, 0.9f, -0.7f, 1.6f};

std::vector<double> to_double(const std::vector<float>& v) {
    return {v.begin(), v.end()};
}

SamplingParams params_with(std::function<void(SamplingParams&)> set) {
    SamplingParams sp;
    sp.seed = 1234;
    set(sp);
    return sp;
}

// --- Statistical tests. -----------------------------------------------------------------

TEST(SamplerStats, TemperatureOnly) {
    for (float t : {0.5f, 1.0f, 2.0f}) {
        const auto sp = params_with([&](SamplingParams& p) { p.temperature = t; });
        const std::string name = "temperature " + std::to_string(t).substr(0, 3);
        expect_distribution(name.c_str(), kLogits, sp, reference(to_double(kLogits), sp));
    }
}

TEST(SamplerStats, TopK) {
    const auto sp = params_with([](SamplingParams& p) { p.top_k = 3; });
    const auto target = reference(to_double(kLogits), sp);
    EXPECT_EQ(std::count_if(target.begin(), target.end(), [](double p) { return p > 0; }), 3);
    expect_distribution("top_k 3", kLogits, sp, target);
}

TEST(SamplerStats, TopP) {
    const auto sp = params_with([](SamplingParams& p) { p.top_p = 0.8f; });
    const auto target = reference(to_double(kLogits), sp);
    EXPECT_EQ(std::count_if(target.begin(), target.end(), [](double p) { return p > 0; }), 4);
    expect_distribution("top_p 0.8", kLogits, sp, target);
}

TEST(SamplerStats, MinP) {
    const auto sp = params_with([](SamplingParams& p) { p.min_p = 0.2f; });
    const auto target = reference(to_double(kLogits), sp);
    EXPECT_EQ(std::count_if(target.begin(), target.end(), [](double p) { return p > 0; }), 4);
    expect_distribution("min_p 0.2", kLogits, sp, target);
}

TEST(SamplerStats, TopKTopPTemperature) {
    const auto sp = params_with([](SamplingParams& p) {
        p.top_k = 5;
        p.top_p = 0.9f;
        p.temperature = 1.5f;
    });
    const auto target = reference(to_double(kLogits), sp);
    EXPECT_EQ(std::count_if(target.begin(), target.end(), [](double p) { return p > 0; }), 4);
    expect_distribution("top_k+top_p+temperature", kLogits, sp, target);
}

TEST(SamplerStats, MinPTemperatureRepetitionPenalty) {
    const auto sp = params_with([](SamplingParams& p) {
        p.min_p = 0.15f;
        p.temperature = 0.7f;
        p.repetition_penalty = 1.5f;
    });
    // Tokens 2, 6 and 7 were seen: 2.1 / 1.5 = 1.4, -0.7 * 1.5 = -1.05, 1.6 / 1.5.
    const std::vector<int32_t> history = {2, 6, 7, 2};
    std::vector<double> penalised = to_double(kLogits);
    penalised[2] = 2.1f / 1.5f;
    penalised[6] = -0.7f * 1.5f;
    penalised[7] = 1.6f / 1.5f;
    const auto target = reference(penalised, sp);
    EXPECT_EQ(std::count_if(target.begin(), target.end(), [](double p) { return p > 0; }), 6);
    expect_distribution("min_p+temperature+rep", kLogits, sp, target, history);
}

std::vector<float> normal_logits(size_t n, float sigma, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, sigma);
    std::vector<float> logits(n);
    for (float& l : logits) l = normal(rng);
    return logits;
}

size_t support_size(const std::vector<double>& target) {
    return static_cast<size_t>(
        std::count_if(target.begin(), target.end(), [](double p) { return p > 0; }));
}

// A nucleus of about 100 tokens on a flat vocabulary: many bisection steps.
TEST(SamplerStats, TopPOnLargerVocabulary) {
    const auto logits = normal_logits(1024, 1.0f, 99);
    const auto sp = params_with([](SamplingParams& p) { p.top_p = 0.4f; });
    const auto target = reference(to_double(logits), sp);
    EXPECT_GT(support_size(target), 64u);
    expect_distribution("top_p 0.4, vocab 1024", logits, sp, target, {}, 10000);
}

// A peaked distribution, like a language model's: the light-tail pass drops most tokens
// before the nucleus search.
TEST(SamplerStats, TopPOnPeakedVocabulary) {
    auto logits = normal_logits(4096, 1.5f, 7);
    for (size_t i = 0; i < logits.size(); i += 400) logits[i] += 12.0f;
    const auto sp = params_with([](SamplingParams& p) {
        p.top_p = 0.9f;
        p.temperature = 0.8f;
    });
    const auto target = reference(to_double(logits), sp);
    EXPECT_GT(support_size(target), 4u);
    expect_distribution("top_p 0.9+temp, peaked 4096", logits, sp, target, {}, 5000);
}

// A k far below the vocabulary size takes top-k's heap (partial_sort) path.
TEST(SamplerStats, TopKOnLargerVocabulary) {
    const auto logits = normal_logits(1024, 1.0f, 3);
    const auto sp = params_with([](SamplingParams& p) { p.top_k = 12; });
    const auto target = reference(to_double(logits), sp);
    EXPECT_EQ(support_size(target), 12u);
    expect_distribution("top_k 12, vocab 1024", logits, sp, target, {}, 10000);
}

// --- Greedy. ----------------------------------------------------------------------------

int32_t sample_once(const SamplingParams& sp, std::vector<float> logits,
                    const std::vector<int32_t>& history = {}) {
    Sampler sampler(sp, static_cast<int32_t>(logits.size()));
    return sampler.sample(logits, history);
}

TEST(SamplerGreedy, IsArgmaxWithTiesToLowestId) {
    const auto greedy = params_with([](SamplingParams& p) { p.temperature = 0; });
    EXPECT_EQ(sample_once(greedy, kLogits), 2);
    EXPECT_EQ(sample_once(greedy, {1.0f, 3.0f, -2.0f, 3.0f, 2.9f}), 1);
    EXPECT_EQ(sample_once(greedy, {-INFINITY, -5.0f, -5.0f}), 1);
    EXPECT_EQ(sample_once(greedy, {NAN, 0.5f, 0.25f}), 1);  // NaN never wins
    // Greedy ignores truncation settings: it is argmax of the adjusted logits.
    const auto truncated = params_with([](SamplingParams& p) {
        p.temperature = 0;
        p.top_k = 1;
        p.min_p = 0.9f;
    });
    EXPECT_EQ(sample_once(truncated, kLogits), 2);
}

TEST(SamplerGreedy, SeesBiasAndPenalties) {
    auto sp = params_with([](SamplingParams& p) {
        p.temperature = 0;
        p.logit_bias[5] = 1.0f;  // 0.9 + 1.0 = 1.9 < 2.1
    });
    EXPECT_EQ(sample_once(sp, kLogits), 2);
    sp.logit_bias[5] = 1.5f;  // 2.4 > 2.1
    EXPECT_EQ(sample_once(sp, kLogits), 5);
    sp.logit_bias.clear();
    sp.repetition_penalty = 1.4f;  // 2.1 / 1.4 = 1.5 < 1.6
    EXPECT_EQ(sample_once(sp, kLogits, {2}), 7);
    sp.repetition_penalty = 1.0f;
    sp.frequency_penalty = 0.3f;  // 2.1 - 0.6 = 1.5 < 1.6
    EXPECT_EQ(sample_once(sp, kLogits, {2, 2}), 7);
    EXPECT_EQ(sample_once(sp, kLogits, {2}), 2);  // 2.1 - 0.3 = 1.8 > 1.6
}

// --- Penalties and bias, exactly. -------------------------------------------------------

TEST(SamplingPenalties, ExactLogits) {
    const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 0.0f, 3.0f, -2.0f};
    const std::vector<int32_t> history = {0, 1, 1, 3, 4, 4, 4};
    const auto sp = params_with([](SamplingParams& p) {
        p.temperature = 0;
        p.repetition_penalty = 2.0f;
        p.presence_penalty = 0.5f;
        p.frequency_penalty = 0.25f;
    });
    std::vector<float> row = logits;
    Sampler sampler(sp, 6);
    EXPECT_EQ(sampler.sample(row, history), 2);  // 0.5 is now the largest
    // count 1:  2 / 2 - 0.5 - 0.25;  count 2: -1 * 2 - 0.5 - 0.5;  count 1: 0 * 2 - 0.75;
    // count 3:  3 / 2 - 0.5 - 0.75;  tokens 2 and 5 unseen.
    const std::vector<float> expected = {0.25f, -3.0f, 0.5f, -0.75f, 0.25f, -2.0f};
    for (size_t i = 0; i < row.size(); ++i) EXPECT_FLOAT_EQ(row[i], expected[i]) << i;
}

TEST(SamplingPenalties, WindowIsTheLastNTokens) {
    const std::vector<float> logits = {1.0f, 1.0f, 1.0f};
    const std::vector<int32_t> history = {0, 0, 1, 2, 2};
    auto penalised_by = [&](int32_t last_n) {
        auto sp = params_with([&](SamplingParams& p) {
            p.frequency_penalty = 1.0f;
            p.penalty_last_n = last_n;
        });
        std::vector<float> row = logits;
        std::vector<int32_t> counts(3, 0);
        apply_penalties(row, penalty_window(history, last_n), sp, counts);
        EXPECT_EQ(counts, std::vector<int32_t>(3, 0)) << "scratch must be left zero";
        return row;
    };
    EXPECT_EQ(penalised_by(0), (std::vector<float>{1.0f, 1.0f, 1.0f}));
    EXPECT_EQ(penalised_by(2), (std::vector<float>{1.0f, 1.0f, -1.0f}));
    EXPECT_EQ(penalised_by(3), (std::vector<float>{1.0f, 0.0f, -1.0f}));
    EXPECT_EQ(penalised_by(-1), (std::vector<float>{-1.0f, 0.0f, -1.0f}));
    EXPECT_EQ(penalised_by(100), (std::vector<float>{-1.0f, 0.0f, -1.0f}));
}

// The example of llama.cpp's DRY sampler comments, worked by hand: in the history
// a b c c b c y a b c, the end "a b c" stood before at positions 0-2, followed by c (a match
// of 3); "b c" at 4-5, followed by y (2); "c" at 3, followed by b (1).
TEST(SamplingDry, PenalisesTheTokensThatWouldContinueARepeat) {
    enum : int32_t { a, b, c, y, z };
    const std::vector<int32_t> history = {a, b, c, c, b, c, y, a, b, c};
    auto dry_logits = [&](int32_t allowed, std::vector<uint8_t> breakers, int32_t last_n = -1) {
        auto sp = params_with([&](SamplingParams& p) {
            p.dry_multiplier = 0.5f;
            p.dry_base = 2.0f;
            p.dry_allowed_length = allowed;
            p.dry_penalty_last_n = last_n;
        });
        std::vector<float> row(5, 1.0f);
        std::vector<int32_t> scratch(5, 0);
        DryPenalty().apply(row, penalty_window(history, last_n), sp, breakers, scratch);
        EXPECT_EQ(scratch, std::vector<int32_t>(5, 0)) << "scratch must be left zero";
        return row;
    };
    const std::vector<uint8_t> none(5, 0);
    // allowed 2: c loses 0.5 * 2^(3-2), y 0.5 * 2^0, b (a match of 1) nothing.
    EXPECT_EQ(dry_logits(2, none), (std::vector<float>{1, 1, 0, 0.5f, 1}));
    EXPECT_EQ(dry_logits(1, none), (std::vector<float>{1, 0.5f, -1, 0, 1}));
    EXPECT_EQ(dry_logits(4, none), (std::vector<float>{1, 1, 1, 1, 1}));
    // A breaker two tokens back (b) cuts every match to 1; a breaker is never penalised.
    EXPECT_EQ(dry_logits(1, {0, 1, 0, 0, 0}), (std::vector<float>{1, 1, 0.5f, 0.5f, 1}));
    EXPECT_EQ(dry_logits(1, {0, 0, 1, 0, 0}), (std::vector<float>{1, 1, 1, 1, 1}));
    // Only the last 6 tokens (b c y a b c): "b c" stood at 0-1, followed by y.
    EXPECT_EQ(dry_logits(2, none, 6), (std::vector<float>{1, 1, 1, 0.5f, 1}));
}

TEST(SamplingDry, ZArrayMatchesTheDefinition) {
    std::mt19937 rng(7);
    for (int round = 0; round < 200; ++round) {
        std::vector<int32_t> r(rng() % 40);
        for (int32_t& t : r) t = static_cast<int32_t>(rng() % 3);
        std::vector<int32_t> z;
        z_array(r, z);
        for (size_t j = 0; j < r.size(); ++j) {
            size_t k = 0;
            while (j + k < r.size() && r[k] == r[j + k]) ++k;
            ASSERT_EQ(static_cast<size_t>(z[j]), k) << "round " << round << " j " << j;
        }
    }
}

TEST(SamplingDry, GreedyLeavesALoop) {
    // Greedy on these logits repeats 0 1 2 forever; DRY makes the continuation of the loop
    // cost more than the runner-up (token 3) once the repeat is long enough.
    auto sp = params_with([](SamplingParams& p) {
        p.temperature = 0;
        p.dry_multiplier = 0.8f;
    });
    Sampler sampler(sp, 6);
    std::vector<int32_t> history = {5, 1, 2, 0, 1, 2};
    std::vector<float> row = {5.0f, 0, 0, 4.0f, 0, 0};  // after ... 1 2, token 0 repeats
    EXPECT_EQ(sampler.sample(row, history), 0);         // a match of 2 (1 2): 5 - 0.8 > 4
    history.insert(history.end(), {0, 1, 2});
    row = {5.0f, 0, 0, 4.0f, 0, 0};
    EXPECT_EQ(sampler.sample(row, history), 3);  // a match of 5 (1 2 0 1 2): 5 - 0.8 * 1.75^3 < 4
}

TEST(SamplingPenalties, BiasIsAddedAndMinusInfinityBans) {
    const auto sp = params_with([](SamplingParams& p) {
        p.logit_bias[2] = -INFINITY;
        p.logit_bias[0] = 0.5f;
    });
    Sampler sampler(sp, static_cast<int32_t>(kLogits.size()));
    std::vector<float> row = kLogits;
    sampler.sample(row, {});
    EXPECT_FLOAT_EQ(row[0], 1.7f);
    EXPECT_EQ(row[2], -INFINITY);
    for (int i = 0; i < 20000; ++i) {
        row = kLogits;
        ASSERT_NE(sampler.sample(row, {}), 2);
    }
    auto greedy = sp;
    greedy.temperature = 0;
    EXPECT_EQ(sample_once(greedy, kLogits), 0);  // 1.7 beats 1.6
}

TEST(SamplingPenalties, EveryTokenBannedIsAnError) {
    for (float t : {0.0f, 1.0f}) {
        const auto sp = params_with([&](SamplingParams& p) {
            p.temperature = t;
            p.logit_bias = {{0, -INFINITY}, {1, -INFINITY}};
        });
        EXPECT_THROW(sample_once(sp, {1.0f, 2.0f}), Error);
    }
}

// --- Seeds. -----------------------------------------------------------------------------

std::vector<int32_t> run(uint64_t seed, int n) {
    const auto sp = params_with([&](SamplingParams& p) {
        p.seed = seed;
        p.top_k = 6;
    });
    Sampler sampler(sp, static_cast<int32_t>(kLogits.size()));
    std::vector<int32_t> tokens;
    for (int i = 0; i < n; ++i) {
        std::vector<float> row = kLogits;
        tokens.push_back(sampler.sample(row, tokens));
    }
    return tokens;
}

TEST(SamplerSeed, SameSeedSameTokensOtherSeedOtherTokens) {
    EXPECT_EQ(run(42, 200), run(42, 200));
    EXPECT_NE(run(42, 200), run(43, 200));
}

// --- The chosen token's probability and logprobs. ---------------------------------------

TEST(SamplerLogprobs, LastProbabilityIsTheFinalDistributions) {
    const auto sp = params_with([](SamplingParams& p) {
        p.top_k = 3;
        p.temperature = 0.8f;
    });
    const auto target = reference(to_double(kLogits), sp);
    Sampler sampler(sp, static_cast<int32_t>(kLogits.size()));
    for (int i = 0; i < 50; ++i) {
        std::vector<float> row = kLogits;
        const int32_t t = sampler.sample(row, {});
        EXPECT_NEAR(sampler.last_probability(), target[static_cast<size_t>(t)], 1e-6);
    }
    auto greedy = sp;
    greedy.temperature = 0;
    Sampler g(greedy, static_cast<int32_t>(kLogits.size()));
    std::vector<float> row = kLogits;
    g.sample(row, {});
    EXPECT_EQ(g.last_probability(), 1.0f);
}

TEST(SamplingLogprobs, TopLogprobsAreTheLogSoftmax) {
    const std::vector<float> logits = {0.5f, 2.0f, -INFINITY, 2.0f, -1.0f};
    const auto p = softmax({0.5, 2.0, -INFINITY, 2.0, -1.0});
    EXPECT_NEAR(log_sum_exp(logits), std::log(std::exp(0.5) + 2 * std::exp(2.0) + std::exp(-1.0)),
                1e-6);
    std::vector<TokenProb> out(3);
    auto top = top_logprobs(logits, out);
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(top[0].id, 1);  // tie with 3: lower id first
    EXPECT_EQ(top[1].id, 3);
    EXPECT_EQ(top[2].id, 0);
    for (const TokenProb& t : top) {
        EXPECT_NEAR(t.logprob, std::log(p[static_cast<size_t>(t.id)]), 1e-6) << t.id;
    }
    std::vector<TokenProb> all(10);
    EXPECT_EQ(top_logprobs(logits, all).size(), 4u);  // the banned token is left out
    EXPECT_TRUE(top_logprobs(logits, std::span<TokenProb>()).empty());
}

// --- Validation. ------------------------------------------------------------------------

TEST(SamplingParams, DefaultsAreValid) {
    EXPECT_NO_THROW(SamplingParams().validate(10));
}

TEST(SamplingParams, RejectsEachInvalidValue) {
    const std::vector<std::pair<std::string, std::function<void(SamplingParams&)>>> cases = {
        {"temperature", [](SamplingParams& p) { p.temperature = -0.1f; }},
        {"temperature", [](SamplingParams& p) { p.temperature = INFINITY; }},
        {"temperature", [](SamplingParams& p) { p.temperature = NAN; }},
        {"top_k", [](SamplingParams& p) { p.top_k = -1; }},
        {"top_p", [](SamplingParams& p) { p.top_p = 0.0f; }},
        {"top_p", [](SamplingParams& p) { p.top_p = 1.01f; }},
        {"top_p", [](SamplingParams& p) { p.top_p = NAN; }},
        {"min_p", [](SamplingParams& p) { p.min_p = -0.01f; }},
        {"min_p", [](SamplingParams& p) { p.min_p = 1.5f; }},
        {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = 0.0f; }},
        {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = -1.0f; }},
        {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = INFINITY; }},
        {"presence_penalty", [](SamplingParams& p) { p.presence_penalty = NAN; }},
        {"frequency_penalty", [](SamplingParams& p) { p.frequency_penalty = -INFINITY; }},
        {"penalty_last_n", [](SamplingParams& p) { p.penalty_last_n = -2; }},
        {"logit_bias", [](SamplingParams& p) { p.logit_bias[10] = 1.0f; }},
        {"logit_bias", [](SamplingParams& p) { p.logit_bias[-1] = 1.0f; }},
        {"logit_bias", [](SamplingParams& p) { p.logit_bias[3] = INFINITY; }},
        {"logit_bias", [](SamplingParams& p) { p.logit_bias[3] = NAN; }},
        {"dry_multiplier", [](SamplingParams& p) { p.dry_multiplier = -0.5f; }},
        {"dry_multiplier", [](SamplingParams& p) { p.dry_multiplier = NAN; }},
        {"dry_base", [](SamplingParams& p) { p.dry_base = 0.9f; }},
        {"dry_allowed_length", [](SamplingParams& p) { p.dry_allowed_length = -1; }},
        {"dry_penalty_last_n", [](SamplingParams& p) { p.dry_penalty_last_n = -2; }},
        {"dry_sequence_breakers", [](SamplingParams& p) { p.dry_sequence_breakers = {""}; }},
        {"dry_sequence_breakers",
         [](SamplingParams& p) { p.dry_sequence_breakers.assign(33, "x"); }},
    };
    for (const auto& [field, set] : cases) {
        SamplingParams p;
        set(p);
        try {
            p.validate(10);
            ADD_FAILURE() << field << ": accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
        }
        EXPECT_THROW(Sampler(p, 10), Error) << field;
    }
    SamplingParams edges;  // the inclusive ends of each range are fine
    edges.temperature = 0;
    edges.top_p = 1;
    edges.min_p = 1;
    edges.penalty_last_n = -1;
    edges.logit_bias = {{0, -INFINITY}, {9, -100.0f}};
    EXPECT_NO_THROW(edges.validate(10));
    EXPECT_THROW(SamplingParams().validate(0), Error);
}

TEST(Sampler, RejectsBadInput) {
    auto sp = params_with([](SamplingParams& p) { p.repetition_penalty = 1.1f; });
    Sampler sampler(sp, 4);
    std::vector<float> short_row = {1, 2, 3};
    EXPECT_THROW(sampler.sample(short_row, {}), Error);
    std::vector<float> row = {1, 2, 3, 4};
    const std::vector<int32_t> bad_history = {1, 4};
    EXPECT_THROW(sampler.sample(row, bad_history), Error);
    const std::vector<int32_t> good_history = {1, 3};
    EXPECT_NO_THROW(sampler.sample(row, good_history));  // scratch still clean after the throw
}

}  // namespace
}  // namespace kite
