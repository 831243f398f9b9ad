#include "quant/blocks_q5.h"

#include <algorithm>
#include <cmath>

#include "quant/fp16.h"

namespace kite {

namespace {

// Packs 32 five-bit values: low nibbles as Q4_0 does, the fifth bits into qh.
template <typename Block>
void pack_q5(const uint8_t (&q)[kQK], Block& b) {
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
        b.qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | (q[j + kQK / 2] & 0x0f) << 4);
        qh |= uint32_t(q[j] >> 4 & 1) << j | uint32_t(q[j + kQK / 2] >> 4 & 1) << (j + kQK / 2);
    }
    for (int i = 0; i < 4; ++i) b.qh[i] = static_cast<uint8_t>(qh >> (8 * i));
}

}  // namespace

void quantize_row_q5_0(const float* x, BlockQ5_0* y, size_t n) {
    for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
        // As Q4_0: the signed value of largest magnitude maps to -16.
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < kQK; ++j) {
            if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
        }
        const float d = max / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        uint8_t q[kQK];
        for (int j = 0; j < kQK; ++j)
            q[j] = static_cast<uint8_t>(std::min(31, int(static_cast<int8_t>(x[j] * id + 16.5f))));
        pack_q5(q, y[b]);
    }
}

void quantize_row_q5_1(const float* x, BlockQ5_1* y, size_t n) {
    for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
        float min = x[0], max = x[0];
        for (int j = 1; j < kQK; ++j) min = std::min(min, x[j]), max = std::max(max, x[j]);
        const float d = (max - min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        y[b].m = f32_to_f16(min);
        uint8_t q[kQK];
        for (int j = 0; j < kQK; ++j) q[j] = static_cast<uint8_t>((x[j] - min) * id + 0.5f);
        pack_q5(q, y[b]);
    }
}

void dequantize_row_q5_0(const BlockQ5_0* x, float* y, size_t n) {
    for (size_t b = 0; b < n / kQK; ++b) {
        const float d = f16_to_f32(x[b].d);
        for (int j = 0; j < kQK; ++j)
            y[b * kQK + j] = d * static_cast<float>(q5_value(x[b], j) - 16);
    }
}

void dequantize_row_q5_1(const BlockQ5_1* x, float* y, size_t n) {
    for (size_t b = 0; b < n / kQK; ++b) {
        const float d = f16_to_f32(x[b].d), m = f16_to_f32(x[b].m);
        for (int j = 0; j < kQK; ++j)
            y[b * kQK + j] = d * static_cast<float>(q5_value(x[b], j)) + m;
    }
}

}  // namespace kite
