#include "kv/kv_type.h"

#include <array>

#include <cstring>

#include "core/error.h"
#include "kernels/ops/ops.h"
#include "quant/blocks.h"

namespace kite {

namespace {

using T = TensorType;

void write_f32(const float* src, void* dst, int64_t n) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void write_f16(const float* src, void* dst, int64_t n) {
    f32_to_f16_row(src, static_cast<uint16_t*>(dst), n);
}

// ggml's reference quantizers, so a cached block is the block llama.cpp would store.
template <typename Block, void (*F)(const float*, Block*, size_t)>
void write_blocks(const float* src, void* dst, int64_t n) {
    F(src, static_cast<Block*>(dst), static_cast<size_t>(n));
}

constexpr std::array<KvTypeInfo, kKvTypeCount> kTypes{{
    {T::F32, "f32", 1, 4, write_f32, false, false},
    {T::F16, "f16", 1, 2, write_f16, false, false},
    {T::Q8_0, "q8_0", kQK, sizeof(BlockQ8_0), write_blocks<BlockQ8_0, quantize_row_q8_0>, true,
     true},
    {T::Q4_0, "q4_0", kQK, sizeof(BlockQ4_0), write_blocks<BlockQ4_0, quantize_row_q4_0>, true,
     true},
}};

}  // namespace

std::span<const KvTypeInfo> kv_types() {
    return kTypes;
}

size_t kv_type_index(TensorType type) {
    for (size_t i = 0; i < kTypes.size(); ++i)
        if (kTypes[i].type == type) return i;
    fail("{} is not a KV-cache type (use {})", tensor_type_name(type), kv_type_names());
}

const KvTypeInfo& kv_type_info(TensorType type) {
    return kTypes[kv_type_index(type)];
}

std::optional<TensorType> parse_kv_type(std::string_view name) {
    for (const KvTypeInfo& t : kTypes)
        if (name == t.name) return t.type;
    return std::nullopt;
}

std::string kv_type_names() {
    std::string names;
    for (const KvTypeInfo& t : kTypes) names += (names.empty() ? "" : ", ") + std::string(t.name);
    return names;
}

size_t kv_row_bytes(TensorType type, int64_t n) {
    const KvTypeInfo& t = kv_type_info(type);
    return static_cast<size_t>(n / t.block_values * t.block_bytes);
}

std::string kv_types_name(const KvTypes& types) {
    const std::string k = kv_type_info(types.k).name;
    return types.k == types.v ? k : k + "/" + kv_type_info(types.v).name;
}

double kv_bytes_per_element(const KvTypes& types) {
    const KvTypeInfo &k = kv_type_info(types.k), &v = kv_type_info(types.v);
    const auto bytes = [](const KvTypeInfo& t) {
        return static_cast<double>(t.block_bytes) / static_cast<double>(t.block_values);
    };
    return (bytes(k) + bytes(v)) / 2;
}

}  // namespace kite
