#include <cstdint>

#include "kernels/dot_products.h"
#include "quant/blocks.h"
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

}  // namespace kite::dot_reference
