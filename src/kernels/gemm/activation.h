// How an activation row is prepared for the dot products of a weight type: kept as float,
// rounded to bf16, or quantized to 8-bit blocks once per row, so that every weight row
// multiplies it with integer arithmetic.
#pragma once

#include <cstddef>

namespace kite {

struct ActivationFormat {
    const char* name;
    size_t (*row_bytes)(size_t n);
    void (*prepare)(const float* x, void* dst, size_t n);
    // Relative error of a dot product with activations prepared this way, against float
    // activations, per sqrt(n): the tolerance tests allow.
    float rounding_error;
};

extern const ActivationFormat kActivationF32;   // F32 and F16 weights: floats as they are
extern const ActivationFormat kActivationBf16;  // BF16 weights: rounded to bf16, as llama.cpp
extern const ActivationFormat kActivationQ8_0;  // Q8_0 and Q4_0 weights: BlockQ8_0
extern const ActivationFormat kActivationQ8_1;  // Q4_1 weights: BlockQ8_1 (Q8_0 + block sums)
// K-quant and IQ4_XS weights: BlockQ8_K (256-value blocks with a float scale and sums of 16)
extern const ActivationFormat kActivationQ8_K;

}  // namespace kite
