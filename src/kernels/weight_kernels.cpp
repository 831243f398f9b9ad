#include "kernels/weight_kernels.h"

#include <array>
#include <vector>

namespace kite {

namespace {

constexpr std::array<WeightKernels, 15> kTable{{
    {TensorType::F32, &kActivationF32, dot_reference::f32, {nullptr, dot_avx2::f32}},
    {TensorType::F16, &kActivationF32, dot_reference::f16, {nullptr, dot_avx2::f16}},
    {TensorType::BF16, &kActivationBf16, dot_reference::bf16, {nullptr, dot_avx2::bf16}},
    {TensorType::Q8_0, &kActivationQ8_0, dot_reference::q8_0, {nullptr, dot_avx2::q8_0}},
    {TensorType::Q4_0, &kActivationQ8_0, dot_reference::q4_0, {nullptr, dot_avx2::q4_0}},
    {TensorType::Q4_1, &kActivationQ8_1, dot_reference::q4_1, {nullptr, dot_avx2::q4_1}},
    {TensorType::Q5_0, &kActivationQ8_0, dot_reference::q5_0, {}},
    {TensorType::Q5_1, &kActivationQ8_1, dot_reference::q5_1, {}},
    {TensorType::IQ4_NL, &kActivationQ8_0, dot_reference::iq4_nl, {}},
    {TensorType::Q2_K, &kActivationQ8_K, dot_reference::q2_k, {}},
    {TensorType::Q3_K, &kActivationQ8_K, dot_reference::q3_k, {}},
    {TensorType::Q4_K, &kActivationQ8_K, dot_reference::q4_k, {}},
    {TensorType::Q5_K, &kActivationQ8_K, dot_reference::q5_k, {}},
    {TensorType::Q6_K, &kActivationQ8_K, dot_reference::q6_k, {}},
    {TensorType::IQ4_XS, &kActivationQ8_K, dot_reference::iq4_xs, {}},
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
