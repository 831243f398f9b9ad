#include "quant/convert.h"

#include <array>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "quant/blocks.h"
#include "quant/blocks_iq4.h"
#include "quant/blocks_k.h"
#include "quant/blocks_q5.h"
#include "quant/fp16.h"

namespace kite {

namespace {

// Adapters from the typed block functions to the table's untyped rows.
template <typename Block, void (*F)(const Block*, float*, size_t)>
void dequantize_blocks(const void* src, float* dst, size_t n) {
    F(static_cast<const Block*>(src), dst, n);
}

template <typename Block, void (*F)(const float*, Block*, size_t)>
void quantize_blocks(const float* src, void* dst, size_t n) {
    F(src, static_cast<Block*>(dst), n);
}

void f32_to_f32(const void* src, float* dst, size_t n) {
    std::memcpy(dst, src, n * sizeof(float));
}

void f32_from_f32(const float* src, void* dst, size_t n) {
    std::memcpy(dst, src, n * sizeof(float));
}

template <float (*F)(uint16_t)>
void widen_halves(const void* src, float* dst, size_t n) {
    auto* s = static_cast<const uint16_t*>(src);
    for (size_t i = 0; i < n; ++i) dst[i] = F(s[i]);
}

template <uint16_t (*F)(float)>
void narrow_to_halves(const float* src, void* dst, size_t n) {
    auto* d = static_cast<uint16_t*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = F(src[i]);
}

using T = TensorType;

// llama_file_type: LLAMA_FTYPE_MOSTLY_*; llama-quantize records a pure Q3_K, Q4_K or Q5_K
// model as its _M mix (12, 15, 17), since those are what the names Q3_K/Q4_K/Q5_K select.
constexpr std::array<RowConversion, 15> kConversions{{
    {T::F32, 0, f32_to_f32, f32_from_f32, T::F32},
    {T::F16, 1, widen_halves<f16_to_f32>, narrow_to_halves<f32_to_f16>, T::F16},
    {T::BF16, 32, widen_halves<bf16_to_f32>, narrow_to_halves<f32_to_bf16>, T::BF16},
    {T::Q8_0, 7, dequantize_blocks<BlockQ8_0, dequantize_row_q8_0>,
     quantize_blocks<BlockQ8_0, quantize_row_q8_0>, T::Q8_0},
    {T::Q4_0, 2, dequantize_blocks<BlockQ4_0, dequantize_row_q4_0>,
     quantize_blocks<BlockQ4_0, quantize_row_q4_0>, T::Q4_0},
    {T::Q4_1, 3, dequantize_blocks<BlockQ4_1, dequantize_row_q4_1>,
     quantize_blocks<BlockQ4_1, quantize_row_q4_1>, T::Q4_1},
    {T::Q5_0, 8, dequantize_blocks<BlockQ5_0, dequantize_row_q5_0>,
     quantize_blocks<BlockQ5_0, quantize_row_q5_0>, T::Q5_0},
    {T::Q5_1, 9, dequantize_blocks<BlockQ5_1, dequantize_row_q5_1>,
     quantize_blocks<BlockQ5_1, quantize_row_q5_1>, T::Q5_1},
    {T::Q2_K, 10, dequantize_blocks<BlockQ2_K, dequantize_row_q2_k>, nullptr, T::Q4_0},
    {T::Q3_K, 12, dequantize_blocks<BlockQ3_K, dequantize_row_q3_k>, nullptr, T::Q4_0},
    {T::Q4_K, 15, dequantize_blocks<BlockQ4_K, dequantize_row_q4_k>,
     quantize_blocks<BlockQ4_K, quantize_row_q4_k>, T::Q5_0},
    {T::Q5_K, 17, dequantize_blocks<BlockQ5_K, dequantize_row_q5_k>,
     quantize_blocks<BlockQ5_K, quantize_row_q5_k>, T::Q5_1},
    {T::Q6_K, 18, dequantize_blocks<BlockQ6_K, dequantize_row_q6_k>,
     quantize_blocks<BlockQ6_K, quantize_row_q6_k>, T::Q8_0},
    {T::IQ4_NL, 25, dequantize_blocks<BlockIQ4_NL, dequantize_row_iq4_nl>, nullptr, T::IQ4_NL},
    {T::IQ4_XS, 30, dequantize_blocks<BlockIQ4_XS, dequantize_row_iq4_xs>, nullptr, T::IQ4_NL},
}};

}  // namespace

std::span<const RowConversion> row_conversions() {
    return kConversions;
}

const RowConversion* row_conversion(TensorType type) {
    for (const RowConversion& c : kConversions)
        if (c.type == type) return &c;
    return nullptr;
}

std::string convertible_type_names() {
    std::vector<TensorType> types;
    for (const auto& row : kConversions) types.push_back(row.type);
    return tensor_type_names(types);
}

std::string writable_type_names() {
    std::vector<TensorType> types;
    for (const auto& row : kConversions)
        if (row.quantize) types.push_back(row.type);
    return tensor_type_names(types);
}

size_t row_bytes(TensorType type, size_t n) {
    const TensorTypeInfo* info = tensor_type_info(static_cast<uint32_t>(type));
    return n / info->block_size * info->block_bytes;
}

void dequantize_row(TensorType type, const void* src, float* dst, size_t n) {
    const RowConversion* c = row_conversion(type);
    if (!c) fail("cannot convert {} to f32", tensor_type_name(type));
    c->dequantize(src, dst, n);
}

void quantize_row(TensorType type, const float* src, void* dst, size_t n) {
    const RowConversion* c = row_conversion(type);
    if (!c) fail("cannot convert f32 to {}", tensor_type_name(type));
    if (!c->quantize)
        fail("cannot write {}: Kite reads it but has no quantizer for it (it writes {})",
             tensor_type_name(type), writable_type_names());
    c->quantize(src, dst, n);
}

}  // namespace kite
