// The element types of the KV cache: how one head's row of head_dim keys or values is stored.
// f32 and f16 hold one value per element; q8_0 and q4_0 are ggml's blocks of 32 values with an
// f16 scale (quant/blocks.h), along the head dimension. One table row per type; the attention
// kernels keep their per-type loaders in tables of the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "gguf/tensor_type.h"

namespace kite {

struct KvTypeInfo {
    TensorType type;
    const char* name;      // as --kv-type spells it
    int64_t block_values;  // values per block: 1, or 32 for the block formats
    int64_t block_bytes;
    // Stores a row of n floats (n a multiple of block_values) in this type: KV write.
    void (*from_f32)(const float* src, void* dst, int64_t n);
    // Keys and values are rotated (quant/hadamard.h) before they are stored, so that one block
    // scale spans 32 values of like size: the block types. 4 bits per value cannot also span
    // the outlier channels that keys have after RoPE; at 8 bits the rotation halved the
    // perplexity cost of q8_0 keys on Qwen2.5-Coder-0.5B, and it halved that of q4_0 values on
    // Qwen2.5-Coder-1.5B (bench/RESULTS.md).
    bool rotated;
    // Keys are centred and scaled per channel before they are stored (kv/key_calibration.h),
    // where the caller gives a calibration: the block types.
    bool calibrated_keys;
};

// f32, f16, q8_0, q4_0: kv_type_index gives a type's position here.
std::span<const KvTypeInfo> kv_types();
constexpr size_t kKvTypeCount = 4;

// kite::Error for a type that is not a KV type.
size_t kv_type_index(TensorType type);
const KvTypeInfo& kv_type_info(TensorType type);

// nullopt for a name that is not in the table.
std::optional<TensorType> parse_kv_type(std::string_view name);
// "f16, f32, q8_0, q4_0", for help texts and errors.
std::string kv_type_names();

// Bytes of a row of n values (n a multiple of the type's block size).
size_t kv_row_bytes(TensorType type, int64_t n);

// Keys and values may be stored in different types.
struct KvTypes {
    TensorType k = TensorType::F16;
    TensorType v = TensorType::F16;

    KvTypes() = default;
    KvTypes(TensorType k_type, TensorType v_type) : k(k_type), v(v_type) {}
    // One type for both (implicit: a single type is what most callers mean).
    KvTypes(TensorType both) : k(both), v(both) {}  // NOLINT(google-explicit-constructor)

    bool operator==(const KvTypes&) const = default;
};

// "q8_0", or "q8_0/q4_0" (keys/values) when they differ.
std::string kv_types_name(const KvTypes& types);

// b of M_kv = 2 * b * B * L * H_kv * s * d_h: bytes per cached value, 34/32 for q8_0 and
// 18/32 for q4_0 (their f16 scale per 32 values included); (b_k + b_v) / 2 when keys and
// values differ. Exact in a double (multiples of 1/64).
double kv_bytes_per_element(const KvTypes& types);

}  // namespace kite
