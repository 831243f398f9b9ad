// Whole-row conversion between float and the weight types Kite reads and writes: one table
// row per type (its row dequantizer and quantizer, and the file type llama.cpp records for
// a model mostly of it). A new block format is one row here plus its functions in blocks.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "gguf/tensor_type.h"

namespace kite {

struct RowConversion {
    TensorType type;
    // llama.cpp's LLAMA_FTYPE (general.file_type) of a model whose weights are mostly `type`.
    uint32_t llama_file_type;
    void (*dequantize)(const void* src, float* dst, size_t n);
    void (*quantize)(const float* src, void* dst, size_t n);
};

// Every type with a row conversion, in the table's order.
std::span<const RowConversion> row_conversions();

// nullptr where Kite cannot convert `type`.
const RowConversion* row_conversion(TensorType type);

// "F32, F16, BF16, Q8_0, Q4_0 and Q4_1": the table's types, for error messages and help.
std::string convertible_type_names();

// Bytes for a row of n values (n a multiple of the type's block size).
size_t row_bytes(TensorType type, size_t n);

// `src` holds a row of n values of `type`; kite::Error for a type without a conversion.
void dequantize_row(TensorType type, const void* src, float* dst, size_t n);
void quantize_row(TensorType type, const float* src, void* dst, size_t n);

}  // namespace kite
