// The steps between a layer's matmuls (norms, biases, RoPE, activations, residual adds) over a
// batch's token rows. They are independent across tokens, so they run on the pool: on one
// thread they left the other cores idle for a tenth or more of a prompt's time. A batch of
// one token (decode) runs on the calling thread, as parallel_for does with one item.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/ops/ops.h"

namespace kite {

// fn(t) for each of n tokens, on the pool.
template <typename Fn>
void for_each_token(ThreadPool& pool, int64_t n, Fn&& fn) {
    pool.parallel_for(n, [&](int64_t begin, int64_t end, int) {
        for (int64_t t = begin; t < end; ++t) fn(t);
    });
}

// RMSNorm of each of the n rows of `width` in x, in place (rows may be heads of a token).
inline void norm_rows(float* x, const std::vector<float>& weight, int64_t n, int64_t width,
                      float eps) {
    for (int64_t r = 0; r < n; ++r)
        rms_norm(x + r * width, weight.data(), x + r * width, width, eps);
}

// out[t] = RMSNorm(x[t]) for n tokens' rows of `width` (out may be x).
inline void rms_norm_rows(const float* x, const std::vector<float>& weight, float* out, int64_t n,
                          int64_t width, float eps, ThreadPool& pool) {
    for_each_token(pool, n, [&](int64_t t) {
        rms_norm(x + t * width, weight.data(), out + t * width, width, eps);
    });
}

// x[t] += delta[t] for n tokens' rows of `width`.
inline void add_rows(float* x, const float* delta, int64_t n, int64_t width, ThreadPool& pool) {
    for_each_token(pool, n,
                   [&](int64_t t) { add_in_place(x + t * width, delta + t * width, width); });
}

// x[t] += bias for n tokens' rows (rows are as wide as the bias; none: nothing to add).
inline void add_bias_rows(float* x, const std::vector<float>& bias, int64_t n, ThreadPool& pool) {
    const auto width = static_cast<int64_t>(bias.size());
    if (width == 0) return;
    for_each_token(pool, n, [&](int64_t t) { add_in_place(x + t * width, bias.data(), width); });
}

}  // namespace kite
