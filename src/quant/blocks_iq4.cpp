#include "quant/blocks_iq4.h"

#include "quant/fp16.h"

namespace kite {

void dequantize_row_iq4_nl(const BlockIQ4_NL* x, float* y, size_t n) {
    for (size_t b = 0; b < n / kQK; ++b, y += kQK) {
        const float d = f16_to_f32(x[b].d);
        for (int j = 0; j < kQK / 2; ++j) {
            y[j] = d * static_cast<float>(kIq4Levels[x[b].qs[j] & 0x0f]);
            y[j + kQK / 2] = d * static_cast<float>(kIq4Levels[x[b].qs[j] >> 4]);
        }
    }
}

void dequantize_row_iq4_xs(const BlockIQ4_XS* x, float* y, size_t n) {
    for (size_t b = 0; b < n / kQK_K; ++b) {
        const float d = f16_to_f32(x[b].d);
        for (int j = 0; j < kQK_K / kQK; ++j, y += kQK) {
            const float dl = d * static_cast<float>(iq4_xs_scale(x[b], j));
            for (int l = 0; l < kQK / 2; ++l) {
                y[l] = dl * static_cast<float>(kIq4Levels[x[b].qs[16 * j + l] & 0x0f]);
                y[l + kQK / 2] = dl * static_cast<float>(kIq4Levels[x[b].qs[16 * j + l] >> 4]);
            }
        }
    }
}

}  // namespace kite
