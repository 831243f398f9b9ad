// Whole-row conversion between float and the weight types Kite reads and writes: one table
// row per type (its row dequantizer, its quantizer if Kite writes it, the file type llama.cpp
// records for a model mostly of it, and what llama.cpp writes instead where a row does not fill
// its blocks). A new block format is one row here plus its functions in a blocks_*.h.
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
    // nullptr for a type Kite reads but does not write.
    void (*quantize)(const float* src, void* dst, size_t n);
    // The type llama-quantize writes instead for a tensor whose rows are not a multiple of
    // this type's block size (K-quants: a 32-value block type; 32-value types: themselves,
    // which then become F16 as any type whose blocks a row does not fill).
    TensorType narrow_rows;
};

// Every type with a row conversion, in the table's order.
std::span<const RowConversion> row_conversions();

// nullptr where Kite cannot convert `type`.
const RowConversion* row_conversion(TensorType type);

// "F32, F16, BF16, Q8_0, ...": the table's types (all readable), for error messages.
std::string convertible_type_names();

// The table's types Kite can write (those with a quantizer), for `kite quantize`.
std::string writable_type_names();

// Bytes for a row of n values (n a multiple of the type's block size).
size_t row_bytes(TensorType type, size_t n);

// `src` holds a row of n values of `type`; kite::Error for a type without a conversion (or,
// for quantize_row, without a quantizer).
void dequantize_row(TensorType type, const void* src, float* dst, size_t n);
void quantize_row(TensorType type, const float* src, void* dst, size_t n);

}  // namespace kite
