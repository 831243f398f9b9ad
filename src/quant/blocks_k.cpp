// Exact dequantization of the K-quant blocks: each weight is computed with the same float
// operations in the same order as ggml (scale products first), so rows equal ggml's bit for bit.
#include "quant/blocks_k.h"
#include "quant/fp16.h"

namespace kite {

void dequantize_row_q2_k(const BlockQ2_K* x, float* y, size_t n) {
    for (size_t b = 0; b < n / kQK_K; ++b, y += kQK_K) {
        const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
        for (int i = 0; i < kQK_K; ++i) {
            const int h = i / 128, s = i / 32 % 4, l = i % 32;
            const int q = (x[b].qs[32 * h + l] >> (2 * s)) & 3;
            const uint8_t sc = x[b].scales[i / 16];
            const float dl = d * static_cast<float>(sc & 0x0f);
            const float ml = dmin * static_cast<float>(sc >> 4);
            y[i] = dl * static_cast<float>(q) - ml;
        }
    }
}

void dequantize_row_q3_k(const BlockQ3_K* x, float* y, size_t n) {
    for (size_t b = 0; b < n / kQK_K; ++b, y += kQK_K) {
        const float d = f16_to_f32(x[b].d);
        for (int i = 0; i < kQK_K; ++i) {
            const int h = i / 128, s = i / 32 % 4, l = i % 32;
            const int low = (x[b].qs[32 * h + l] >> (2 * s)) & 3;
            const bool high = (x[b].hmask[l] >> (i / 32)) & 1;
            const float dl = d * static_cast<float>(q3_k_scale(x[b].scales, i / 16));
            y[i] = dl * static_cast<float>(low - (high ? 0 : 4));
        }
    }
}

void dequantize_row_q4_k(const BlockQ4_K* x, float* y, size_t n) {
    for (size_t b = 0; b < n / kQK_K; ++b, y += kQK_K) {
        const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
        for (int j = 0; j < 8; ++j) {
            const ScaleMin sm = k_scale_min(x[b].scales, j);
            const float dl = d * static_cast<float>(sm.scale);
            const float ml = dmin * static_cast<float>(sm.min);
            for (int l = 0; l < 32; ++l) {
                const int q = (x[b].qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0x0f;
                y[32 * j + l] = dl * static_cast<float>(q) - ml;
            }
        }
    }
}

void dequantize_row_q5_k(const BlockQ5_K* x, float* y, size_t n) {
    for (size_t b = 0; b < n / kQK_K; ++b, y += kQK_K) {
        const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
        for (int j = 0; j < 8; ++j) {
            const ScaleMin sm = k_scale_min(x[b].scales, j);
            const float dl = d * static_cast<float>(sm.scale);
            const float ml = dmin * static_cast<float>(sm.min);
            for (int l = 0; l < 32; ++l) {
                const int low = (x[b].qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0x0f;
                const int q = low | ((x[b].qh[l] >> j) & 1) << 4;
                y[32 * j + l] = dl * static_cast<float>(q) - ml;
            }
        }
    }
}

void dequantize_row_q6_k(const BlockQ6_K* x, float* y, size_t n) {
    for (size_t b = 0; b < n / kQK_K; ++b, y += kQK_K) {
        const float d = f16_to_f32(x[b].d);
        for (int i = 0; i < kQK_K; ++i) {
            const int h = i / 128, k = i / 64 % 2, s = i / 32 % 4;
            const int low = (x[b].ql[64 * h + i % 64] >> (4 * k)) & 0x0f;
            const int high = (x[b].qh[32 * h + i % 32] >> (2 * s)) & 3;
            const float dl = d * static_cast<float>(x[b].scales[i / 16]);
            y[i] = dl * static_cast<float>((low | high << 4) - 32);
        }
    }
}

}  // namespace kite
