#include "kernels/weight_kernels.h"

#include <array>
#include <vector>

namespace kite {

namespace {

constexpr std::array<WeightKernels, 6> kTable{{
    {TensorType::F32, &kActivationF32, dot_reference::f32, {nullptr, dot_avx2::f32}},
    {TensorType::F16, &kActivationF32, dot_reference::f16, {nullptr, dot_avx2::f16}},
    {TensorType::BF16, &kActivationBf16, dot_reference::bf16, {nullptr, dot_avx2::bf16}},
    {TensorType::Q8_0, &kActivationQ8_0, dot_reference::q8_0, {nullptr, dot_avx2::q8_0}},
    {TensorType::Q4_0, &kActivationQ8_0, dot_reference::q4_0, {nullptr, dot_avx2::q4_0}},
    {TensorType::Q4_1, &kActivationQ8_1, dot_reference::q4_1, {nullptr, dot_avx2::q4_1}},
}};

}  // namespace

std::span<const WeightKernels> weight_kernel_table() {
    return kTable;
}

const WeightKernels* weight_kernels(TensorType type) {
    for (const WeightKernels& k : kTable)
        if (k.type == type) return &k;
    return nullptr;
}

std::string compute_type_names() {
    std::vector<TensorType> types;
    for (const auto& row : kTable) types.push_back(row.type);
    return tensor_type_names(types);
}

DotFn dot_for(const WeightKernels& k, Isa isa) {
    for (int level = static_cast<int>(isa); level > 0; --level)
        if (k.dot[level]) return k.dot[level];
    return k.dot_reference;
}

}  // namespace kite
