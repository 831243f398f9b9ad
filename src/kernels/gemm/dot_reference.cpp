#include <cstdint>

#include "kernels/gemm/dot_products.h"
#include "quant/blocks.h"
#include "quant/blocks_iq4.h"
#include "quant/blocks_k.h"
#include "quant/blocks_q5.h"
#include "quant/fp16.h"

namespace kite::dot_reference {

float f32(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const float*>(w);
    auto* y = static_cast<const float*>(a);
    float sum = 0;
    for (size_t i = 0; i < n; ++i) sum += x[i] * y[i];
    return sum;
}

float f16(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const uint16_t*>(w);
    auto* y = static_cast<const float*>(a);
    float sum = 0;
    for (size_t i = 0; i < n; ++i) sum += f16_to_f32(x[i]) * y[i];
    return sum;
}

float bf16(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const uint16_t*>(w);
    auto* y = static_cast<const uint16_t*>(a);
    float sum = 0;
    for (size_t i = 0; i < n; ++i) sum += bf16_to_f32(x[i]) * bf16_to_f32(y[i]);
    return sum;
}

float q8_0(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ8_0*>(w);
    auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0;
    for (size_t b = 0; b < n / kQK; ++b) {
        int isum = 0;
        for (int j = 0; j < kQK; ++j) isum += x[b].qs[j] * y[b].qs[j];
        sum += f16_to_f32(x[b].d) * f16_to_f32(y[b].d) * static_cast<float>(isum);
    }
    return sum;
}

float q4_0(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ4_0*>(w);
    auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0;
    for (size_t b = 0; b < n / kQK; ++b) {
        int isum = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            isum += ((x[b].qs[j] & 0x0f) - 8) * y[b].qs[j];
            isum += ((x[b].qs[j] >> 4) - 8) * y[b].qs[j + kQK / 2];
        }
        sum += f16_to_f32(x[b].d) * f16_to_f32(y[b].d) * static_cast<float>(isum);
    }
    return sum;
}

// sum_j (d_w q_j + m_w) * d_a a_j = d_w d_a sum(q_j a_j) + m_w * s_a.
float q4_1(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ4_1*>(w);
    auto* y = static_cast<const BlockQ8_1*>(a);
    float sum = 0;
    for (size_t b = 0; b < n / kQK; ++b) {
        int isum = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            isum += (x[b].qs[j] & 0x0f) * y[b].qs[j];
            isum += (x[b].qs[j] >> 4) * y[b].qs[j + kQK / 2];
        }
        sum += f16_to_f32(x[b].d) * f16_to_f32(y[b].d) * static_cast<float>(isum) +
               f16_to_f32(x[b].m) * f16_to_f32(y[b].s);
    }
    return sum;
}

float q5_0(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ5_0*>(w);
    auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0;
    for (size_t b = 0; b < n / kQK; ++b) {
        int isum = 0;
        for (int j = 0; j < kQK; ++j) isum += (q5_value(x[b], j) - 16) * y[b].qs[j];
        sum += f16_to_f32(x[b].d) * f16_to_f32(y[b].d) * static_cast<float>(isum);
    }
    return sum;
}

// As q4_1: the minimum rides on the activations' block sums.
float q5_1(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ5_1*>(w);
    auto* y = static_cast<const BlockQ8_1*>(a);
    float sum = 0;
    for (size_t b = 0; b < n / kQK; ++b) {
        int isum = 0;
        for (int j = 0; j < kQK; ++j) isum += q5_value(x[b], j) * y[b].qs[j];
        sum += f16_to_f32(x[b].d) * f16_to_f32(y[b].d) * static_cast<float>(isum) +
               f16_to_f32(x[b].m) * f16_to_f32(y[b].s);
    }
    return sum;
}

float iq4_nl(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockIQ4_NL*>(w);
    auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0;
    for (size_t b = 0; b < n / kQK; ++b) {
        int isum = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            isum += kIq4Levels[x[b].qs[j] & 0x0f] * y[b].qs[j];
            isum += kIq4Levels[x[b].qs[j] >> 4] * y[b].qs[j + kQK / 2];
        }
        sum += f16_to_f32(x[b].d) * f16_to_f32(y[b].d) * static_cast<float>(isum);
    }
    return sum;
}

// The K-quants: per super-block, integer sums per sub-block weighted by the sub-block scales;
// a minimum multiplies the activations' sums of 16 (bsums), so it costs no pass over the
// values.

float q2_k(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ2_K*>(w);
    auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0;
    for (size_t b = 0; b < n / kQK_K; ++b) {
        int scaled = 0, mins = 0;
        for (int s = 0; s < kQK_K / 16; ++s) {
            int isum = 0;
            for (int i = 16 * s; i < 16 * s + 16; ++i)
                isum += ((x[b].qs[32 * (i / 128) + i % 32] >> (2 * (i / 32 % 4))) & 3) * y[b].qs[i];
            scaled += (x[b].scales[s] & 0x0f) * isum;
            mins += (x[b].scales[s] >> 4) * y[b].bsums[s];
        }
        sum += y[b].d * (f16_to_f32(x[b].d) * static_cast<float>(scaled) -
                         f16_to_f32(x[b].dmin) * static_cast<float>(mins));
    }
    return sum;
}

float q3_k(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ3_K*>(w);
    auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0;
    for (size_t b = 0; b < n / kQK_K; ++b) {
        int scaled = 0;
        for (int s = 0; s < kQK_K / 16; ++s) {
            int isum = 0;
            for (int i = 16 * s; i < 16 * s + 16; ++i) {
                const int low = (x[b].qs[32 * (i / 128) + i % 32] >> (2 * (i / 32 % 4))) & 3;
                const bool high = (x[b].hmask[i % 32] >> (i / 32)) & 1;
                isum += (low - (high ? 0 : 4)) * y[b].qs[i];
            }
            scaled += q3_k_scale(x[b].scales, s) * isum;
        }
        sum += y[b].d * f16_to_f32(x[b].d) * static_cast<float>(scaled);
    }
    return sum;
}

namespace {

// Q4_K and Q5_K: 32-value sub-blocks with 6-bit scales and minimums; `value(block, i)` is
// weight i's level.
template <typename Block, typename Value>
float dot_k_scale_min(const void* w, const void* a, size_t n, Value value) {
    auto* x = static_cast<const Block*>(w);
    auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0;
    for (size_t b = 0; b < n / kQK_K; ++b) {
        int scaled = 0, mins = 0;
        for (int j = 0; j < 8; ++j) {
            const ScaleMin sm = k_scale_min(x[b].scales, j);
            int isum = 0;
            for (int i = 32 * j; i < 32 * j + 32; ++i) isum += value(x[b], i) * y[b].qs[i];
            scaled += sm.scale * isum;
            mins += sm.min * (y[b].bsums[2 * j] + y[b].bsums[2 * j + 1]);
        }
        sum += y[b].d * (f16_to_f32(x[b].d) * static_cast<float>(scaled) -
                         f16_to_f32(x[b].dmin) * static_cast<float>(mins));
    }
    return sum;
}

}  // namespace

float q4_k(const void* w, const void* a, size_t n) {
    return dot_k_scale_min<BlockQ4_K>(w, a, n, [](const BlockQ4_K& x, int i) {
        return (x.qs[32 * (i / 64) + i % 32] >> (4 * (i / 32 % 2))) & 0x0f;
    });
}

float q5_k(const void* w, const void* a, size_t n) {
    return dot_k_scale_min<BlockQ5_K>(w, a, n, [](const BlockQ5_K& x, int i) {
        const int low = (x.qs[32 * (i / 64) + i % 32] >> (4 * (i / 32 % 2))) & 0x0f;
        return low | ((x.qh[i % 32] >> (i / 32)) & 1) << 4;
    });
}

float q6_k(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ6_K*>(w);
    auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0;
    for (size_t b = 0; b < n / kQK_K; ++b) {
        int scaled = 0;
        for (int s = 0; s < kQK_K / 16; ++s) {
            int isum = 0;
            for (int i = 16 * s; i < 16 * s + 16; ++i) {
                const int low = (x[b].ql[64 * (i / 128) + i % 64] >> (4 * (i / 64 % 2))) & 0x0f;
                const int high = (x[b].qh[32 * (i / 128) + i % 32] >> (2 * (i / 32 % 4))) & 3;
                isum += ((low | high << 4) - 32) * y[b].qs[i];
            }
            scaled += x[b].scales[s] * isum;
        }
        sum += y[b].d * f16_to_f32(x[b].d) * static_cast<float>(scaled);
    }
    return sum;
}

float iq4_xs(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockIQ4_XS*>(w);
    auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0;
    for (size_t b = 0; b < n / kQK_K; ++b) {
        int scaled = 0;
        for (int j = 0; j < kQK_K / kQK; ++j) {
            const int8_t* q8 = y[b].qs + kQK * j;
            int isum = 0;
            for (int l = 0; l < kQK / 2; ++l) {
                isum += kIq4Levels[x[b].qs[16 * j + l] & 0x0f] * q8[l];
                isum += kIq4Levels[x[b].qs[16 * j + l] >> 4] * q8[l + kQK / 2];
            }
            scaled += iq4_xs_scale(x[b], j) * isum;
        }
        sum += y[b].d * f16_to_f32(x[b].d) * static_cast<float>(scaled);
    }
    return sum;
}

}  // namespace kite::dot_reference
