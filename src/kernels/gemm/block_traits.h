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

}  // namespace kite
