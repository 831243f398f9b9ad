#include "quant/blocks.h"

#include <algorithm>
#include <cmath>

#include "quant/fp16.h"

namespace kite {

void quantize_row_q8_0(const float* x, BlockQ8_0* y, size_t n) {
    for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
        float amax = 0.0f;
        for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        for (int j = 0; j < kQK; ++j) y[b].qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
    }
}

void quantize_row_q4_0(const float* x, BlockQ4_0* y, size_t n) {
    for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
        // The signed value of largest magnitude maps to -8, so the scale may be negative.
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < kQK; ++j) {
            if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        for (int j = 0; j < kQK / 2; ++j) {
            auto q0 =
                std::min<uint8_t>(15, static_cast<uint8_t>(static_cast<int8_t>(x[j] * id + 8.5f)));
            auto q1 = std::min<uint8_t>(
                15, static_cast<uint8_t>(static_cast<int8_t>(x[j + kQK / 2] * id + 8.5f)));
            y[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
        }
    }
}

void quantize_row_q4_1(const float* x, BlockQ4_1* y, size_t n) {
    for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
        float min = x[0], max = x[0];
        for (int j = 1; j < kQK; ++j) min = std::min(min, x[j]), max = std::max(max, x[j]);
        const float d = (max - min) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = f32_to_f16(d);
        y[b].m = f32_to_f16(min);
        for (int j = 0; j < kQK / 2; ++j) {
            auto q0 = std::min<uint8_t>(
                15, static_cast<uint8_t>(static_cast<int8_t>((x[j] - min) * id + 0.5f)));
            auto q1 = std::min<uint8_t>(
                15, static_cast<uint8_t>(static_cast<int8_t>((x[j + kQK / 2] - min) * id + 0.5f)));
            y[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
        }
    }
}

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, size_t n) {
    for (size_t b = 0; b < n / kQK; ++b) {
        const float d = f16_to_f32(x[b].d);
        for (int j = 0; j < kQK; ++j) y[b * kQK + j] = d * x[b].qs[j];
    }
}

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, size_t n) {
    for (size_t b = 0; b < n / kQK; ++b) {
        const float d = f16_to_f32(x[b].d);
        for (int j = 0; j < kQK / 2; ++j) {
            y[b * kQK + j] = d * ((x[b].qs[j] & 0x0f) - 8);
            y[b * kQK + j + kQK / 2] = d * ((x[b].qs[j] >> 4) - 8);
        }
    }
}

void dequantize_row_q4_1(const BlockQ4_1* x, float* y, size_t n) {
    for (size_t b = 0; b < n / kQK; ++b) {
        const float d = f16_to_f32(x[b].d), m = f16_to_f32(x[b].m);
        for (int j = 0; j < kQK / 2; ++j) {
            y[b * kQK + j] = d * (x[b].qs[j] & 0x0f) + m;
            y[b * kQK + j + kQK / 2] = d * (x[b].qs[j] >> 4) + m;
        }
    }
}

}  // namespace kite
