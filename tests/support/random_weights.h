// Random weight rows of any type the kernels compute with, for tests: quantized from normal
// floats where Kite writes the type, else random blocks whose f16 scales are set to small
// finite values (random bytes elsewhere), so that every bit pattern of the levels occurs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "quant/blocks_iq4.h"
#include "quant/blocks_k.h"
#include "quant/convert.h"
#include "quant/fp16.h"

namespace kite::test {

// Where a block of a type Kite only reads keeps its f16 scales, and the largest magnitude of
// (sub-block scale x level) its integers can express: scales of about 1 / that keep weights
// near 1, the size the dot-product tolerances assume.
struct ScaleFields {
    std::vector<size_t> offsets;
    float largest_level;
};

inline ScaleFields scale_fields(TensorType type) {
    switch (type) {
        case TensorType::Q2_K:
            return {{offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)}, 45};
        case TensorType::Q3_K:
            return {{offsetof(BlockQ3_K, d)}, 128};
        case TensorType::IQ4_NL:
            return {{offsetof(BlockIQ4_NL, d)}, 127};
        case TensorType::IQ4_XS:
            return {{offsetof(BlockIQ4_XS, d)}, 32 * 127};
        default:
            return {};
    }
}

inline std::vector<uint8_t> random_weight_row(TensorType type, size_t n, std::mt19937& rng) {
    std::vector<uint8_t> row(row_bytes(type, n));
    if (row_conversion(type)->quantize) {
        std::normal_distribution<float> dist(0.0f, 1.0f);
        std::vector<float> w(n);
        for (float& v : w) v = dist(rng);
        quantize_row(type, w.data(), row.data(), n);
        return row;
    }
    for (uint8_t& byte : row) byte = static_cast<uint8_t>(rng());
    const TensorTypeInfo& info = *tensor_type_info(static_cast<uint32_t>(type));
    const ScaleFields fields = scale_fields(type);
    std::uniform_real_distribution<float> scale(0.5f / fields.largest_level,
                                                2.0f / fields.largest_level);
    for (size_t b = 0; b < n / info.block_size; ++b)
        for (size_t offset : fields.offsets) {
            const uint16_t h = f32_to_f16(scale(rng));
            std::memcpy(&row[b * info.block_bytes + offset], &h, sizeof h);
        }
    return row;
}

}  // namespace kite::test
