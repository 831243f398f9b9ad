// Speculative acceptance on a small vocabulary, against distributions computed from the
// definitions: a point-mass draft token is kept with probability p(t) under the whole sampler
// chain, its replacement follows p without t, and the first tokens of a speculative chain
// (drafts right, wrong, or impossible; penalties seeing the accepted tokens) are distributed
// as those of plain sampling (two-sample chi-square).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

#include "chi_square.h"
#include "sampling/speculative_acceptance.h"

namespace kite {
namespace {

constexpr int32_t kVocab = 5;

SamplingParams chain_params(uint64_t seed) {
    SamplingParams p;
    p.temperature = 0.8f;
    p.top_p = 0.9f;
    p.repetition_penalty = 1.3f;
    p.presence_penalty = 0.2f;
    p.penalty_last_n = -1;
    p.seed = seed;
    return p;
}

// A toy model: next-token logits as a fixed function of the history.
std::vector<float> toy_logits(const std::vector<int32_t>& history) {
    std::vector<float> l(kVocab);
    const int32_t last = history.empty() ? 0 : history.back();
    for (int32_t t = 0; t < kVocab; ++t)
        l[t] = 0.7f * static_cast<float>((t * 3 + last * 2 + static_cast<int32_t>(history.size())) %
                                         kVocab) -
               0.3f * static_cast<float>(t == last);
    return l;
}

// The chain's final distribution, from the definitions, in double: penalties on every
// distinct history token, top-p on the temperature-1 softmax, then softmax at temperature t
// over the kept tokens.
std::vector<double> reference_distribution(const std::vector<float>& logits,
                                           const std::vector<int32_t>& history,
                                           const SamplingParams& p) {
    std::vector<double> l(logits.begin(), logits.end());
    for (int32_t t = 0; t < kVocab; ++t) {
        const auto c = std::count(history.begin(), history.end(), t);
        if (c == 0) continue;
        l[t] = l[t] > 0 ? l[t] / p.repetition_penalty : l[t] * p.repetition_penalty;
        l[t] -= p.presence_penalty;
    }
    const double max = *std::max_element(l.begin(), l.end());
    std::vector<double> p1(kVocab);
    double sum = 0;
    for (int32_t t = 0; t < kVocab; ++t) sum += p1[t] = std::exp(l[t] - max);
    std::vector<int32_t> order(kVocab);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[a] > l[b]; });
    std::vector<bool> keep(kVocab, false);
    double mass = 0;
    for (int32_t t : order) {
        keep[t] = true;
        mass += p1[t] / sum;
        if (mass >= p.top_p) break;
    }
    std::vector<double> out(kVocab, 0);
    double total = 0;
    for (int32_t t = 0; t < kVocab; ++t)
        if (keep[t]) total += out[t] = std::exp((l[t] - max) / p.temperature);
    for (double& x : out) x /= total;
    return out;
}

TEST(SpecAcceptance, KeepsADraftWithItsProbabilityAndReplacesItFromTheRest) {
    const std::vector<int32_t> history{1, 3, 3};
    const std::vector<float> logits = toy_logits(history);
    const std::vector<double> p = reference_distribution(logits, history, chain_params(0));
    for (int32_t draft = 0; draft < kVocab; ++draft) {
        const int64_t n = 20000;
        int64_t accepted = 0;
        std::vector<int64_t> replaced(kVocab, 0);
        for (int64_t i = 0; i < n; ++i) {
            Sampler sampler(chain_params(static_cast<uint64_t>(i) + 1000 * draft), kVocab);
            std::vector<float> row = logits;
            const DraftVerdict v = verify_draft_token(sampler, row, history, draft);
            ASSERT_EQ(v.accepted, v.token == draft);
            if (v.accepted)
                accepted++;
            else
                replaced[v.token]++;
        }
        const double sigma = std::sqrt(p[draft] * (1 - p[draft]) / n);
        EXPECT_NEAR(static_cast<double>(accepted) / n, p[draft], 5 * sigma + 1e-12)
            << "draft " << draft;
        // The replacement follows p with the draft removed and renormalised.
        std::vector<double> rest = p;
        rest[draft] = 0;
        const double rest_mass = 1 - p[draft];
        for (double& x : rest) x /= rest_mass;
        for (int32_t t = 0; t < kVocab; ++t)
            if (rest[t] == 0) {
                EXPECT_EQ(replaced[t], 0) << "token " << t;
            }
        const auto fit = testing::chi_square(replaced, rest, n - accepted);
        EXPECT_GT(fit.p_value, 1e-4) << "draft " << draft << " chi2 " << fit.statistic;
    }
}

TEST(SpecAcceptance, GreedyAcceptsExactlyTheArgmax) {
    SamplingParams g;
    g.temperature = 0;
    Sampler sampler(g, kVocab);
    const std::vector<float> logits{0.5f, 2.0f, 1.0f, 2.0f, -1.0f};  // tie: lowest id wins
    for (int32_t draft = 0; draft < kVocab; ++draft) {
        std::vector<float> row = logits;
        const DraftVerdict v = verify_draft_token(sampler, row, {}, draft);
        EXPECT_EQ(v.token, 1);
        EXPECT_EQ(v.accepted, draft == 1);
    }
}

using Drafting = std::function<int32_t(const std::vector<int32_t>& history)>;

// The first `n` tokens after `prompt`: each step's drafts are verified in order (row i sees
// the tokens accepted before it, as the engine's rows do), then the replacement or bonus.
std::vector<int32_t> speculate(const std::vector<int32_t>& prompt, int64_t n, int64_t k,
                               const Drafting& drafter, uint64_t seed) {
    Sampler sampler(chain_params(seed), kVocab);
    std::vector<int32_t> tokens = prompt;
    while (static_cast<int64_t>(tokens.size() - prompt.size()) < n) {
        std::vector<int32_t> draft, guess = tokens;
        for (int64_t i = 0; i < k; ++i) guess.push_back(draft.emplace_back(drafter(guess)));
        for (size_t i = 0; i <= draft.size(); ++i) {
            std::vector<float> row = toy_logits(tokens);
            const DraftVerdict v = i < draft.size()
                                       ? verify_draft_token(sampler, row, tokens, draft[i])
                                       : DraftVerdict{sampler.sample(row, tokens), false};
            tokens.push_back(v.token);
            if (!v.accepted) break;
        }
    }
    return {tokens.begin() + static_cast<ptrdiff_t>(prompt.size()),
            tokens.begin() + static_cast<ptrdiff_t>(prompt.size() + n)};
}

std::vector<int32_t> plain(const std::vector<int32_t>& prompt, int64_t n, uint64_t seed) {
    Sampler sampler(chain_params(seed), kVocab);
    std::vector<int32_t> tokens = prompt;
    for (int64_t i = 0; i < n; ++i) {
        std::vector<float> row = toy_logits(tokens);
        tokens.push_back(sampler.sample(row, tokens));
    }
    return {tokens.begin() + static_cast<ptrdiff_t>(prompt.size()), tokens.end()};
}

int64_t outcome(const std::vector<int32_t>& tokens) {
    int64_t index = 0;
    for (int32_t t : tokens) index = index * kVocab + t;
    return index;
}

// Two-sample chi-square for equal sample sizes: sum (a - b)^2 / (a + b) over the bins seen.
testing::ChiSquare two_sample(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    testing::ChiSquare r;
    int bins = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i] + b[i] == 0) continue;
        const double d = static_cast<double>(a[i] - b[i]);
        r.statistic += d * d / static_cast<double>(a[i] + b[i]);
        ++bins;
    }
    r.df = bins - 1;
    r.p_value = testing::chi_square_p_value(r.statistic, r.df);
    return r;
}

TEST(SpecAcceptance, FirstTokensFollowPlainSamplingWhateverTheDrafterGuesses) {
    const std::vector<int32_t> prompt{2, 0};
    const int64_t n = 3, draws = 20000;
    struct Case {
        Drafting drafter;
        int64_t k;
    };
    const Case cases[] = {
        {[](const std::vector<int32_t>& h) { return (h.back() + 1) % kVocab; }, 3},  // often right
        {[](const std::vector<int32_t>&) { return 4; }, 1},           // mostly outside the nucleus
        {[](const std::vector<int32_t>& h) { return h.back(); }, 2},  // penalised repeats
    };
    std::vector<int64_t> base(static_cast<size_t>(std::pow(kVocab, n)), 0);
    for (int64_t i = 0; i < draws; ++i) base[outcome(plain(prompt, n, i))]++;
    for (size_t c = 0; c < std::size(cases); ++c) {
        std::vector<int64_t> spec(base.size(), 0);
        for (int64_t i = 0; i < draws; ++i)
            spec[outcome(speculate(prompt, n, cases[c].k, cases[c].drafter, 1'000'000 + i))]++;
        const auto fit = two_sample(base, spec);
        EXPECT_GT(fit.p_value, 1e-4)
            << "case " << c << " chi2 " << fit.statistic << " df " << fit.df;
    }
}

}  // namespace
}  // namespace kite
