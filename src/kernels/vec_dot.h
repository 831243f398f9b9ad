// Dot products of one weight row with one activation row, per weight type. Quantized
// weights meet activations quantized to 8-bit blocks, so the inner loop is integer math.
// Each type has a scalar reference and a SIMD path picked at run time from cpuid.
#pragma once

#include <cstddef>

#include "gguf/tensor_type.h"

namespace kite {

// How activations are prepared for a weight type.
enum class ActFormat {
    F32,   // F32 and F16 weights: activations stay float
    BF16,  // BF16 weights: activations rounded to bf16, as llama.cpp and vdpbf16ps take them
    Q8_0,  // Q8_0 and Q4_0 weights
    Q8_1,  // Q4_1 weights: Q8_0 plus the scaled block sum
};

ActFormat activation_format(TensorType weight_type);
size_t activation_row_bytes(ActFormat format, size_t n);
void prepare_activation(ActFormat format, const float* x, void* dst, size_t n);

// Returns dot(weight row of n values, prepared activation row).
using DotFn = float (*)(const void* weight_row, const void* activation_row, size_t n);

DotFn dot_reference(TensorType weight_type);  // scalar, the definition
DotFn dot_fast(TensorType weight_type);       // best path for this CPU

// Name of the SIMD level dot_fast uses ("avx2" or "scalar").
const char* dot_isa();

}  // namespace kite
