// The tensor element types a GGUF file may name (ggml's type ids), with their block layout.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace kite {

// Ids are fixed by the file format. Gaps are ids ggml has retired.
enum class TensorType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
};

// Elements are stored in blocks of `block_size` elements taking `block_bytes` bytes.
struct TensorTypeInfo {
    const char* name;
    uint32_t block_size;
    uint32_t block_bytes;
};

// nullptr for an id this build does not know.
const TensorTypeInfo* tensor_type_info(uint32_t id);

// "Q4_1", or "unknown type 77".
std::string tensor_type_name(uint32_t id);
inline std::string tensor_type_name(TensorType t) {
    return tensor_type_name(static_cast<uint32_t>(t));
}

// "F32, F16 and Q8_0": a list of names for messages.
std::string tensor_type_names(std::span<const TensorType> types);

}  // namespace kite
