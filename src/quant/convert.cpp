#include "quant/convert.h"

#include <cstdint>
#include <cstring>

#include "core/error.h"
#include "quant/blocks.h"
#include "quant/fp16.h"

namespace kite {

bool is_compute_type(TensorType type) {
    switch (type) {
        case TensorType::F32:
        case TensorType::F16:
        case TensorType::BF16:
        case TensorType::Q8_0:
        case TensorType::Q4_0:
        case TensorType::Q4_1:
            return true;
        default:
            return false;
    }
}

size_t row_bytes(TensorType type, size_t n) {
    const TensorTypeInfo* info = tensor_type_info(static_cast<uint32_t>(type));
    return n / info->block_size * info->block_bytes;
}

void dequantize_row(TensorType type, const void* src, float* dst, size_t n) {
    switch (type) {
        case TensorType::F32:
            std::memcpy(dst, src, n * sizeof(float));
            return;
        case TensorType::F16: {
            auto* s = static_cast<const uint16_t*>(src);
            for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
            return;
        }
        case TensorType::BF16: {
            auto* s = static_cast<const uint16_t*>(src);
            for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
            return;
        }
        case TensorType::Q8_0:
            dequantize_row_q8_0(static_cast<const BlockQ8_0*>(src), dst, n);
            return;
        case TensorType::Q4_0:
            dequantize_row_q4_0(static_cast<const BlockQ4_0*>(src), dst, n);
            return;
        case TensorType::Q4_1:
            dequantize_row_q4_1(static_cast<const BlockQ4_1*>(src), dst, n);
            return;
        default:
            fail("cannot convert {} to f32", tensor_type_name(type));
    }
}

void quantize_row(TensorType type, const float* src, void* dst, size_t n) {
    switch (type) {
        case TensorType::F32:
            std::memcpy(dst, src, n * sizeof(float));
            return;
        case TensorType::F16: {
            auto* d = static_cast<uint16_t*>(dst);
            for (size_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
            return;
        }
        case TensorType::BF16: {
            auto* d = static_cast<uint16_t*>(dst);
            for (size_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
            return;
        }
        case TensorType::Q8_0:
            quantize_row_q8_0(src, static_cast<BlockQ8_0*>(dst), n);
            return;
        case TensorType::Q4_0:
            quantize_row_q4_0(src, static_cast<BlockQ4_0*>(dst), n);
            return;
        case TensorType::Q4_1:
            quantize_row_q4_1(src, static_cast<BlockQ4_1*>(dst), n);
            return;
        default:
            fail("cannot convert f32 to {}", tensor_type_name(type));
    }
}

}  // namespace kite
