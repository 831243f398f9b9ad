// What the packed kernels need to know of a plain quantized block format besides its size.
#pragma once

#include "gguf/tensor_type.h"

namespace kite {

// Q4_1 and Q5_1 blocks add a minimum, x = d * level + m; the others hold signed weights as
// levels with an offset (x = d * (level - offset), packed_layout.h's level_offset).
constexpr bool has_min(TensorType t) {
    return t == TensorType::Q4_1 || t == TensorType::Q5_1;
}

// Q5_0 and Q5_1 levels have a fifth bit, stored apart from their low nibbles.
constexpr bool has_fifth_bit(TensorType t) {
    return t == TensorType::Q5_0 || t == TensorType::Q5_1;
}

// The kernels multiply unsigned levels, the weight plus this (vpmaddubsw and vpdpbusd take
// unsigned times signed bytes), by the signed activations, so a block's product carries
// level_offset * sum(activation quants). Q4_0 and Q5_0 store their levels; Q4_1's and Q5_1's
// are their weights (the minimum is separate); Q8_0 stores its weights (AVX2 multiplies them by the
// sign trick, VNNI flips their top bit: w + 128).
constexpr int level_offset(TensorType t) {
    return t == TensorType::Q8_0 ? 128 : t == TensorType::Q4_0 ? 8 : t == TensorType::Q5_0 ? 16 : 0;
}

}  // namespace kite
