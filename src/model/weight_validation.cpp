#include "model/weight_validation.h"

#include <cstring>

#include "core/error.h"

namespace kite {

namespace {

// Byte offsets of the f16 scale fields inside one block (ggml's block layouts); types not
// listed here carry no float scales Kite can check (or are not computed with).
struct ScaleFields {
    TensorType type;
    uint32_t offsets[2];
    uint32_t count;
};

constexpr ScaleFields kScaleFields[] = {
    {TensorType::Q4_0, {0, 0}, 1},   {TensorType::Q4_1, {0, 2}, 2},
    {TensorType::Q5_0, {0, 0}, 1},   {TensorType::Q5_1, {0, 2}, 2},
    {TensorType::Q8_0, {0, 0}, 1},   {TensorType::IQ4_NL, {0, 0}, 1},
    {TensorType::IQ4_XS, {0, 0}, 1}, {TensorType::Q2_K, {80, 82}, 2},
    {TensorType::Q3_K, {108, 0}, 1}, {TensorType::Q4_K, {0, 2}, 2},
    {TensorType::Q5_K, {0, 2}, 2},   {TensorType::Q6_K, {208, 0}, 1},
};

// Counting with a mask instead of returning early keeps the loops branch-free, so the
// compiler vectorises them (the common case is a clean file, read to the end).
template <typename Bits>
uint64_t count_bad(const uint8_t* data, uint64_t n, uint64_t stride, Bits exponent_mask) {
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; ++i) {
        Bits v;
        std::memcpy(&v, data + i * stride, sizeof v);
        bad += (v & exponent_mask) == exponent_mask;
    }
    return bad;
}

template <typename Bits>
int64_t first_bad(const uint8_t* data, uint64_t n, uint64_t stride, Bits exponent_mask) {
    if (count_bad(data, n, stride, exponent_mask) == 0) return -1;
    for (uint64_t i = 0; i < n; ++i) {
        Bits v;
        std::memcpy(&v, data + i * stride, sizeof v);
        if ((v & exponent_mask) == exponent_mask) return static_cast<int64_t>(i);
    }
    return -1;
}

constexpr uint32_t kF32Exponent = 0x7f800000u;
constexpr uint16_t kF16Exponent = 0x7c00u;
constexpr uint16_t kBF16Exponent = 0x7f80u;

}  // namespace

int64_t first_non_finite(TensorType type, const uint8_t* data, uint64_t n_elements) {
    switch (type) {
        case TensorType::F32:
            return first_bad<uint32_t>(data, n_elements, 4, kF32Exponent);
        case TensorType::F16:
            return first_bad<uint16_t>(data, n_elements, 2, kF16Exponent);
        case TensorType::BF16:
            return first_bad<uint16_t>(data, n_elements, 2, kBF16Exponent);
        default:
            break;
    }
    const TensorTypeInfo* info = tensor_type_info(static_cast<uint32_t>(type));
    for (const ScaleFields& f : kScaleFields) {
        if (f.type != type || !info) continue;
        const uint64_t blocks = n_elements / info->block_size;
        int64_t first = -1;
        for (uint32_t k = 0; k < f.count; ++k) {
            const int64_t b =
                first_bad<uint16_t>(data + f.offsets[k], blocks, info->block_bytes, kF16Exponent);
            if (b >= 0 && (first < 0 || b < first)) first = b;
        }
        return first;
    }
    return -1;
}

void validate_tensor_values(const GgufFile& file) {
    for (const GgufTensor& t : file.tensors()) {
        const int64_t at = first_non_finite(t.type(), t.data, t.n_elements);
        if (at < 0) continue;
        const bool is_float = t.type() == TensorType::F32 || t.type() == TensorType::F16 ||
                              t.type() == TensorType::BF16;
        fail(
            "'{}': tensor '{}' ({}) has a non-finite {} {} (NaN or infinity); the file is "
            "corrupt",
            file.name(), t.name, tensor_type_name(t.type_id),
            is_float ? "value at element" : "scale in block", at);
    }
}

}  // namespace kite
