#include "kernels/gemm/activation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "quant/blocks.h"
#include "quant/blocks_k.h"
#include "quant/fp16.h"

namespace kite {

namespace {

// Activations are quantized as llama.cpp's SIMD code does at run time (not as its reference
// weight quantizer): scale by 127 / amax and round half to even. The two differ in the last
// bit often enough to move logits, and matching it keeps our logits next to llama.cpp's.
template <typename Block>
void quantize_activation(const float* x, void* dst, size_t n) {
    auto* y = static_cast<Block*>(dst);
    for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
        float amax = 0.0f;
        for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        int sum = 0;
        for (int j = 0; j < kQK; ++j) {
            y[b].qs[j] = static_cast<int8_t>(std::nearbyint(x[j] * id));
            sum += y[b].qs[j];
        }
        y[b].d = f32_to_f16(d);
        if constexpr (std::is_same_v<Block, BlockQ8_1>)
            y[b].s = f32_to_f16(d * static_cast<float>(sum));
    }
}

template <typename Block>
size_t block_row_bytes(size_t n) {
    return n / kQK * sizeof(Block);
}

size_t q8_k_row_bytes(size_t n) {
    return n / kQK_K * sizeof(BlockQ8_K);
}

void quantize_q8_k_activation(const float* x, void* dst, size_t n) {
    quantize_row_q8_k(x, static_cast<BlockQ8_K*>(dst), n);
}

void copy_floats(const float* x, void* dst, size_t n) {
    std::copy(x, x + n, static_cast<float*>(dst));
}

void round_to_bf16(const float* x, void* dst, size_t n) {
    std::transform(x, x + n, static_cast<uint16_t*>(dst), f32_to_bf16);
}

}  // namespace

// bf16 keeps 8 significant bits, the 8-bit blocks about 7.
constinit const ActivationFormat kActivationF32{"f32", [](size_t n) { return n * sizeof(float); },
                                                copy_floats, 1e-4f};
constinit const ActivationFormat kActivationBf16{
    "bf16", [](size_t n) { return n * sizeof(uint16_t); }, round_to_bf16, 4e-3f};
constinit const ActivationFormat kActivationQ8_0{"q8_0", block_row_bytes<BlockQ8_0>,
                                                 quantize_activation<BlockQ8_0>, 0.02f};
constinit const ActivationFormat kActivationQ8_1{"q8_1", block_row_bytes<BlockQ8_1>,
                                                 quantize_activation<BlockQ8_1>, 0.02f};

// llama.cpp's reference Q8_K (its x86 kernels quantize K-quant activations the same way).
constinit const ActivationFormat kActivationQ8_K{"q8_k", q8_k_row_bytes, quantize_q8_k_activation,
                                                 0.02f};

}  // namespace kite
