#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"
#include "sampling/penalties.h"

namespace kite {

namespace {

// Higher logit first; equal logits by lower id, so truncation is deterministic.
template <typename T>
bool more_likely(const T& a, const T& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// The largest logit, ignoring NaN; -inf if there is none. Eight independent running maxima
// let the compiler use vector max instructions instead of one long dependency chain (a
// vocabulary-sized loop, run for every token).
float max_logit(std::span<const float> logits) {
    constexpr size_t kLanes = 8;
    float lane[kLanes];
    std::fill(lane, lane + kLanes, -INFINITY);
    size_t i = 0;
    for (; i + kLanes <= logits.size(); i += kLanes) {
        for (size_t j = 0; j < kLanes; ++j) {
            lane[j] = logits[i + j] > lane[j] ? logits[i + j] : lane[j];
        }
    }
    for (; i < logits.size(); ++i) lane[0] = logits[i] > lane[0] ? logits[i] : lane[0];
    return *std::max_element(lane, lane + kLanes);
}

// A double in [0, 1) from the top 53 bits, written out so that a seed gives the same
// tokens with every standard library (std::uniform_real_distribution is not specified
// bit for bit).
double uniform01(std::mt19937_64& rng) {
    return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace

Sampler::Sampler(SamplingParams params, int32_t vocab_size,
                 std::shared_ptr<const std::vector<uint8_t>> dry_breakers)
    : params_(std::move(params)),
      vocab_size_(vocab_size),
      rng_(params_.seed),
      dry_breakers_(std::move(dry_breakers)) {
    params_.validate(vocab_size);
    candidates_.resize(static_cast<size_t>(vocab_size));
    counts_.assign(static_cast<size_t>(vocab_size), 0);
    if (params_.dry_on() && (!dry_breakers_ || dry_breakers_->size() != counts_.size()))
        dry_breakers_ = std::make_shared<const std::vector<uint8_t>>(counts_.size(), 0);
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history) {
    const bool penalise = !penalties_off(params_);
    const auto window = penalty_window(history, penalise ? params_.penalty_last_n : 0);
    const auto dry_window =
        penalty_window(history, params_.dry_on() ? params_.dry_penalty_last_n : 0);
    check_input(logits, window.size() > dry_window.size() ? window : dry_window);

    apply_logit_bias(logits, params_);
    if (penalise) apply_penalties(logits, window, params_, counts_);
    if (params_.dry_on()) dry_.apply(logits, dry_window, params_, *dry_breakers_, counts_);
    if (params_.temperature == 0.0f) return argmax(logits);

    gather_candidates(logits);
    keep_top_k();
    keep_top_p();
    keep_min_p();
    return draw();
}

void Sampler::check_input(std::span<const float> logits, std::span<const int32_t> window) const {
    if (logits.size() != static_cast<size_t>(vocab_size_)) {
        fail("sampling: got {} logits for a vocabulary of {}", logits.size(), vocab_size_);
    }
    // Checked before any count is touched, so a bad id leaves the scratch clean.
    for (int32_t t : window) {
        if (t < 0 || t >= vocab_size_) {
            fail("sampling: history token id {} is outside the vocabulary [0, {})", t, vocab_size_);
        }
    }
}

int32_t Sampler::argmax(std::span<const float> logits) {
    const float max = max_logit(logits);
    if (max == -INFINITY) fail("sampling: every token is banned (all logits are -inf or NaN)");
    // The first occurrence: ties go to the lowest id.
    const auto best = std::find(logits.begin(), logits.end(), max) - logits.begin();
    last_probability_ = 1.0f;
    return static_cast<int32_t>(best);
}

void Sampler::gather_candidates(std::span<const float> logits) {
    // Banned tokens (-inf) and NaN never enter, so they can never be drawn and never upset
    // the strict ordering nth_element relies on.
    live_ = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
        if (logits[i] > -INFINITY) candidates_[live_++] = {static_cast<int32_t>(i), logits[i], 0};
    }
    max_logit_ = max_logit(logits);
    if (live_ == 0) fail("sampling: every token is banned (all logits are -inf or NaN)");
}

void Sampler::keep_top_k() {
    const auto k = static_cast<size_t>(params_.top_k);
    if (k == 0 || k >= live_) return;
    auto c = live();
    const auto kth = c.begin() + static_cast<ptrdiff_t>(k);
    // A small k (the usual 40) is found fastest by partial_sort's heap, where nearly every
    // token costs one well-predicted comparison; past about n/64 nth_element wins (measured).
    if (k <= c.size() / 64) {
        std::partial_sort(c.begin(), kth, c.end(), more_likely<Candidate>);
    } else {
        std::nth_element(c.begin(), kth, c.end(), more_likely<Candidate>);
    }
    live_ = k;
}

void Sampler::keep_top_p() {
    if (params_.top_p >= 1.0f || live_ <= 1) return;
    auto c = live();
    double total = 0;
    for (Candidate& x : c) total += x.weight = std::exp(x.logit - max_logit_);
    const double target = params_.top_p * total;

    // Tokens lighter than (1 - p) * total / n weigh less than (1 - p) * total together, so
    // the others still reach target and hold the whole nucleus: drop the light ones in one
    // cheap pass (most of a peaked distribution's long tail), then search the rest.
    const double floor = (1.0 - params_.top_p) * total / static_cast<double>(c.size());
    size_t heavy = 0;
    for (const Candidate& x : c) {
        c[heavy] = x;
        heavy += x.weight >= floor;
    }
    live_ = nucleus_size(c.first(heavy), target);
}

// The nucleus is the shortest most-likely-first prefix whose weight reaches target. Rather
// than sorting (a 0.95 nucleus can be most of the vocabulary), bisect on rank: split the
// undecided ranks [lo, hi) at their middle with nth_element, and keep the half that holds
// the boundary. Expected O(n) in all; the kept tokens end up first, in no particular order.
size_t Sampler::nucleus_size(std::span<Candidate> c, double target) {
    // Invariant: [0, lo) are the lo most likely tokens and weigh `kept` < target (or lo is
    // 0); [lo, hi) are the next ones; the first hi tokens reach target (or hi is all).
    size_t lo = 0, hi = c.size();
    double kept = 0;
    const auto at = [&](size_t i) { return c.begin() + static_cast<ptrdiff_t>(i); };
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        std::nth_element(at(lo), at(mid), at(hi), more_likely<Candidate>);
        double half = 0;
        for (size_t i = lo; i < mid; ++i) half += c[i].weight;
        if (kept + half >= target) {
            hi = mid;
        } else {
            kept += half;
            lo = mid;
        }
    }
    return hi;
}

void Sampler::keep_min_p() {
    if (params_.min_p <= 0.0f || live_ <= 1) return;
    auto c = live();
    // p >= min_p * p_max  <=>  logit - max_logit >= log(min_p): no softmax needed.
    const float log_min_p = std::log(params_.min_p);
    auto kept = std::remove_if(
        c.begin(), c.end(), [&](const Candidate& x) { return x.logit - max_logit_ < log_min_p; });
    live_ = static_cast<size_t>(kept - c.begin());
}

int32_t Sampler::draw() {
    auto c = live();
    if (c.size() == 1) {
        last_probability_ = 1.0f;
        return c[0].id;
    }
    const float t = params_.temperature;
    double total = 0;
    for (Candidate& x : c) total += x.weight = std::exp((x.logit - max_logit_) / t);

    const double u = uniform01(rng_) * total;
    double sum = 0;
    size_t chosen = 0;  // the max-logit candidate has weight 1, so some weight is positive
    for (size_t i = 0; i < c.size(); ++i) {
        if (c[i].weight <= 0) continue;  // underflowed to zero: must never be drawn
        chosen = i;
        sum += c[i].weight;
        if (u < sum) break;
    }
    last_probability_ = static_cast<float>(c[chosen].weight / total);
    return c[chosen].id;
}

}  // namespace kite
