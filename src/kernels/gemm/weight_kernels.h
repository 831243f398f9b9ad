// The weight kernel table: for each weight type the model can compute with, how its
// activations are prepared, its reference dot product, and per instruction set the kernels
// that multiply it. Chosen once per matrix at load; nothing else in the engine names a type's
// kernels. A new weight type is one row here plus its kernels (and its row conversion in
// quant/convert.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "gguf/tensor_type.h"
#include "kernels/cpu/isa.h"
#include "kernels/gemm/activation.h"
#include "kernels/gemm/dot_products.h"
#include "kernels/gemm/packed_gemm.h"

namespace kite {

struct WeightKernels {
    TensorType type;
    const ActivationFormat* activation;
    DotFn dot_reference;  // the definition the other kernels are tested against
    // Row-by-row dot products per instruction set (indexed by Isa); nullptr: the one of the
    // level below. Used where no packed kernel covers a matrix.
    DotFn dot[kIsaCount];
    // Kernels for weights repacked at load, per instruction set (indexed by Isa); nullptr:
    // none at that level, the matrix stays as in the file and takes the dot products.
    const PackedKernels* packed[kIsaCount];
};

// Every type with kernels, in the table's order.
std::span<const WeightKernels> weight_kernel_table();

// nullptr where the model cannot compute with `type`.
const WeightKernels* weight_kernels(TensorType type);

// "F32, F16, BF16, Q8_0, Q4_0 and Q4_1": the table's types, for error messages.
std::string compute_type_names();

// The packed kernels of `type` at exactly level `isa`, or nullptr.
const PackedKernels* packed_kernels(TensorType type, Isa isa);

// The largest activation row any packed kernels of `type` prepare (for scratch sizes).
size_t packed_activation_bytes(TensorType type, int64_t cols);

// The row dot product `isa` runs for k (the nearest level at or below it that has one).
DotFn dot_for(const WeightKernels& k, Isa isa);

}  // namespace kite
