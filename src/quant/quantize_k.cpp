// Quantizers to Q4_K, Q5_K and Q6_K that write the bytes of ggml's reference quantizers
// without an importance matrix: per sub-block, a search over a few candidate scales for the
// one with least weighted squared error, then the sub-block scales themselves quantized to 6
// or 8 bits against the super-block's f16 scale.
//
// To give the same bytes the float arithmetic must be the same, operation for operation and in
// the same order: every product and sum rounded to float (llama.cpp builds these reference
// quantizers for the baseline x86-64, so without fused multiply-adds; this file must not be
// compiled with contraction into FMA either).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/blocks_k.h"
#include "quant/fp16.h"

namespace kite {

namespace {

// The nearest integer to x, ties to even (|x| < 2^22), as ggml's nearest_int: adding 1.5 * 2^23
// leaves the rounded integer in the low mantissa bits.
int nearest_int(float x) {
    const float shifted = x + 12582912.0f;
    int32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

// Scale and minimum for n values x as scale * L + min with L in [0, nmax], minimising the
// error weighted by `weights`: starting from the range's scale, tries nstep + 1 more scales
// (nmax + rmin + rdelta * step over the range), each with the least-squares scale and minimum
// for its levels. Returns the scale; *neg_min is -min (min <= 0); L gets the levels.
float fit_scale_and_min(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                        float* neg_min, float rmin, float rdelta, int nstep) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        min = std::min(min, x[i]);
        max = std::max(max, x[i]);
        sum_w += weights[i];
        sum_x += weights[i] * x[i];
    }
    min = std::min(min, 0.0f);
    if (max == min) {
        std::fill(L, L + n, 0);
        *neg_min = -min;
        return 0.0f;
    }
    float iscale = static_cast<float>(nmax) / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = static_cast<uint8_t>(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
        const float diff = scale * L[i] + min - x[i];
        best_error += weights[i] * (diff * diff);
    }
    uint8_t candidate[32];
    for (int step = 0; step <= nstep; ++step) {
        iscale =
            (rmin + rdelta * static_cast<float>(step) + static_cast<float>(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
            candidate[i] = static_cast<uint8_t>(l);
            const float wl = weights[i] * static_cast<float>(l);
            sum_l += wl;
            sum_l2 += wl * static_cast<float>(l);
            sum_xl += wl * x[i];
        }
        const float det = sum_w * sum_l2 - sum_l * sum_l;
        if (det <= 0) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        float error = 0;
        for (int i = 0; i < n; ++i) {
            const float diff = this_scale * candidate[i] + this_min - x[i];
            error += weights[i] * (diff * diff);
        }
        if (error < best_error) {
            std::copy(candidate, candidate + n, L);
            best_error = error;
            scale = this_scale;
            min = this_min;
        }
    }
    *neg_min = -min;
    return scale;
}

// Signed scale for n values x as scale * (L - nmax), L in [0, 2 nmax - 1], weighting each
// value by x^2: the least-squares scale for the levels of scale max / -nmax and of 18 nearby
// scales, keeping the best. Returns the scale (0 for an all-zero group).
float fit_signed_scale(int n, int nmax, const float* x, int8_t* L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
    }
    if (amax < 1e-15f) {
        std::fill(L, L + n, 0);
        return 0.0f;
    }
    auto level = [nmax](float iscale, float v) {
        return std::clamp(nearest_int(iscale * v), -nmax, nmax - 1);
    };
    // Sums of x * l and l^2 weighted by x^2 for the levels of `iscale`.
    auto fit = [&](float iscale, float& sum_lx, float& sum_l2) {
        sum_lx = sum_l2 = 0;
        for (int i = 0; i < n; ++i) {
            const float l = static_cast<float>(level(iscale, x[i]));
            const float w = x[i] * x[i];
            sum_lx += w * x[i] * l;
            sum_l2 += w * l * l;
        }
    };
    float iscale = static_cast<float>(-nmax) / max;
    float sum_lx, sum_l2;
    fit(iscale, sum_lx, sum_l2);
    for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(level(iscale, x[i]) + nmax);
    float scale = sum_l2 != 0 ? sum_lx / sum_l2 : 0.0f;
    float best = scale * sum_lx;
    for (int step = -9; step <= 9; ++step) {
        if (step == 0) continue;
        iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / max;
        fit(iscale, sum_lx, sum_l2);
        if (sum_l2 > 0 && sum_lx * sum_lx > best * sum_l2) {
            for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(level(iscale, x[i]) + nmax);
            scale = sum_lx / sum_l2;
            best = scale * sum_lx;
        }
    }
    return scale;
}

// Packs 6-bit scale and minimum of sub-block j into Q4_K/Q5_K's 12 bytes (see k_scale_min).
void pack_scale_min(uint8_t* s, int j, int scale, int min) {
    if (j < 4) {
        s[j] = static_cast<uint8_t>(scale);
        s[j + 4] = static_cast<uint8_t>(min);
    } else {
        s[j + 4] = static_cast<uint8_t>((scale & 0x0f) | (min & 0x0f) << 4);
        s[j - 4] |= static_cast<uint8_t>((scale >> 4) << 6);
        s[j] |= static_cast<uint8_t>((min >> 4) << 6);
    }
}

// The shared part of Q4_K and Q5_K: levels L[256] in [0, nmax] and the scales, minimums and
// their two f16 scales, written into the block's d, dmin and scales.
template <typename Block>
void quantize_scales_and_levels(const float* x, Block& y, uint8_t* L, int nmax, float rmin,
                                int nstep) {
    float scales[8], mins[8], weights[32];
    std::memset(y.scales, 0, sizeof y.scales);
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        const float* xs = x + 32 * j;
        // Each value counts by its magnitude plus the sub-block's RMS.
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
        scales[j] =
            fit_scale_and_min(32, nmax, xs, weights, L + 32 * j, &mins[j], rmin, 0.1f, nstep);
        max_scale = std::max(max_scale, scales[j]);
        max_min = std::max(max_min, mins[j]);
    }
    const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    for (int j = 0; j < 8; ++j)
        pack_scale_min(y.scales, j, std::min(63, nearest_int(inv_scale * scales[j])),
                       std::min(63, nearest_int(inv_min * mins[j])));
    y.d = f32_to_f16(max_scale / 63.0f);
    y.dmin = f32_to_f16(max_min / 63.0f);
    // Levels again against the scales as stored; a sub-block whose scale rounded to 0 keeps
    // the levels of its fit.
    for (int j = 0; j < 8; ++j) {
        const ScaleMin sm = k_scale_min(y.scales, j);
        const float d = f16_to_f32(y.d) * static_cast<float>(sm.scale);
        if (d == 0) continue;
        const float dm = f16_to_f32(y.dmin) * static_cast<float>(sm.min);
        for (int l = 0; l < 32; ++l)
            L[32 * j + l] =
                static_cast<uint8_t>(std::clamp(nearest_int((x[32 * j + l] + dm) / d), 0, nmax));
    }
}

}  // namespace

void quantize_row_q4_k(const float* x, BlockQ4_K* y, size_t n) {
    for (size_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
        uint8_t L[kQK_K];
        quantize_scales_and_levels(x, y[b], L, 15, -1.0f, 20);
        for (int g = 0; g < 4; ++g)
            for (int l = 0; l < 32; ++l)
                y[b].qs[32 * g + l] = static_cast<uint8_t>(L[64 * g + l] | L[64 * g + 32 + l] << 4);
    }
}

void quantize_row_q5_k(const float* x, BlockQ5_K* y, size_t n) {
    for (size_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
        uint8_t L[kQK_K];
        quantize_scales_and_levels(x, y[b], L, 31, -0.5f, 15);
        std::memset(y[b].qh, 0, sizeof y[b].qh);
        for (int g = 0; g < 4; ++g)
            for (int l = 0; l < 32; ++l) {
                const int lo = L[64 * g + l], hi = L[64 * g + 32 + l];
                y[b].qs[32 * g + l] = static_cast<uint8_t>((lo & 0x0f) | (hi & 0x0f) << 4);
                y[b].qh[l] |= static_cast<uint8_t>((lo >> 4) << (2 * g) | (hi >> 4) << (2 * g + 1));
            }
    }
}

void quantize_row_q6_k(const float* x, BlockQ6_K* y, size_t n) {
    for (size_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
        int8_t L[kQK_K];
        float scales[kQK_K / 16];
        float max_scale = 0, max_abs_scale = 0;
        for (int j = 0; j < kQK_K / 16; ++j) {
            scales[j] = fit_signed_scale(16, 32, x + 16 * j, L + 16 * j);
            if (std::fabs(scales[j]) > max_abs_scale)
                max_abs_scale = std::fabs(scales[j]), max_scale = scales[j];
        }
        if (max_abs_scale < 1e-15f) {
            std::memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        const float iscale = -128.0f / max_scale;
        y[b].d = f32_to_f16(1 / iscale);
        for (int j = 0; j < kQK_K / 16; ++j)
            y[b].scales[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[j])));
        // Levels again against the scales as stored (a zero scale keeps its fit's levels).
        for (int j = 0; j < kQK_K / 16; ++j) {
            const float d = f16_to_f32(y[b].d) * static_cast<float>(y[b].scales[j]);
            if (d == 0) continue;
            for (int l = 0; l < 16; ++l)
                L[16 * j + l] =
                    static_cast<int8_t>(std::clamp(nearest_int(x[16 * j + l] / d), -32, 31) + 32);
        }
        for (int h = 0; h < 2; ++h) {
            const int8_t* q = L + 128 * h;
            for (int l = 0; l < 32; ++l) {
                y[b].ql[64 * h + l] = static_cast<uint8_t>((q[l] & 0x0f) | (q[l + 64] & 0x0f) << 4);
                y[b].ql[64 * h + l + 32] =
                    static_cast<uint8_t>((q[l + 32] & 0x0f) | (q[l + 96] & 0x0f) << 4);
                y[b].qh[32 * h + l] =
                    static_cast<uint8_t>((q[l] >> 4) | (q[l + 32] >> 4) << 2 |
                                         (q[l + 64] >> 4) << 4 | (q[l + 96] >> 4) << 6);
            }
        }
    }
}

void quantize_row_q8_k(const float* x, BlockQ8_K* y, size_t n) {
    for (size_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
        float max = 0, amax = 0;
        for (int j = 0; j < kQK_K; ++j) {
            if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
        }
        std::memset(&y[b], 0, sizeof y[b]);
        if (amax == 0) continue;
        // The value of largest magnitude maps to -127 (not -128): the sign may flip the scale.
        const float iscale = -127.0f / max;
        for (int j = 0; j < kQK_K; ++j)
            y[b].qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
        for (int j = 0; j < kQK_K / 16; ++j) {
            int sum = 0;
            for (int l = 0; l < 16; ++l) sum += y[b].qs[16 * j + l];
            y[b].bsums[j] = static_cast<int16_t>(sum);
        }
        y[b].d = 1 / iscale;
    }
}

}  // namespace kite
