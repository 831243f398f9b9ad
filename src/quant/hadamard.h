// The 32-point Walsh-Hadamard transform, normalised (orthogonal and its own inverse), applied
// to each block of 32 values. Rotating keys before they are quantized spreads an outlier
// channel over its whole block, so the block's scale no longer has to span it; queries get the
// same rotation, and q . k is unchanged because the transform is orthogonal.
#pragma once

#include <cstdint>

namespace kite {

// x holds n values, n a multiple of 32; each block of 32 is transformed in place.
void hadamard32_blocks(float* x, int64_t n);

}  // namespace kite
