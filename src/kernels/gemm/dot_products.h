// Dot products of one weight row (as stored in the file) with one prepared activation row
// (activation.h), per weight type: the scalar references, which define the results, and
// their AVX2 versions. Matmuls use them where no packed kernel covers a matrix; the weight
// kernel table (weight_kernels.h) says which goes with which type.
#pragma once

#include <cstddef>

namespace kite {

// Returns dot(weight row of n values, prepared activation row).
using DotFn = float (*)(const void* weight_row, const void* activation_row, size_t n);

namespace dot_reference {
float f32(const void* w, const void* a, size_t n);
float f16(const void* w, const void* a, size_t n);
float bf16(const void* w, const void* a, size_t n);
float q8_0(const void* w, const void* a, size_t n);
float q4_0(const void* w, const void* a, size_t n);
float q4_1(const void* w, const void* a, size_t n);
// With Q8_0 activations (Q5_1: Q8_1).
float q5_0(const void* w, const void* a, size_t n);
float q5_1(const void* w, const void* a, size_t n);
float iq4_nl(const void* w, const void* a, size_t n);
// With Q8_K activations.
float q2_k(const void* w, const void* a, size_t n);
float q3_k(const void* w, const void* a, size_t n);
float q4_k(const void* w, const void* a, size_t n);
float q5_k(const void* w, const void* a, size_t n);
float q6_k(const void* w, const void* a, size_t n);
float iq4_xs(const void* w, const void* a, size_t n);
}  // namespace dot_reference

// Need AVX2, FMA and F16C.
namespace dot_avx2 {
float f32(const void* w, const void* a, size_t n);
float f16(const void* w, const void* a, size_t n);
float bf16(const void* w, const void* a, size_t n);
float q8_0(const void* w, const void* a, size_t n);
float q4_0(const void* w, const void* a, size_t n);
float q4_1(const void* w, const void* a, size_t n);
}  // namespace dot_avx2

}  // namespace kite
