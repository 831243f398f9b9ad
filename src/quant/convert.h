// Whole-row conversion between float and every weight type Kite computes with.
#pragma once

#include <cstddef>

#include "gguf/tensor_type.h"

namespace kite {

// F32, F16, BF16, Q8_0, Q4_0, Q4_1: the weight types the model can use.
bool is_compute_type(TensorType type);

// Bytes for a row of n values (n a multiple of the type's block size).
size_t row_bytes(TensorType type, size_t n);

// `src` holds a row of n values of `type`; throws kite::Error for other types.
void dequantize_row(TensorType type, const void* src, float* dst, size_t n);
void quantize_row(TensorType type, const float* src, void* dst, size_t n);

}  // namespace kite
