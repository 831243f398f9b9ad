// Load-time checks of tensor values, once per file: every value of a float tensor (F32, F16,
// BF16: norms, biases, unquantized matrices) and every block scale of a quantized one must be
// finite. A NaN or infinity there would make every generation silently empty or random; here
// it is one error naming the tensor and the position. Costs one pass over the scales (a few
// milliseconds for a quantized 135M model) and one over float tensors.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/gguf_file.h"

namespace kite {

// Throws kite::Error for the first tensor holding a non-finite value or block scale.
void validate_tensor_values(const GgufFile& file);

// Where the first non-finite value of a tensor is, or -1. `element` for float types is the
// element index; for quantized types it is the block index. For tests and the check above.
int64_t first_non_finite(TensorType type, const uint8_t* data, uint64_t n_elements);

}  // namespace kite
