#include "kernels/gemm/weight_kernels.h"

#include <algorithm>
#include <array>
#include <vector>

namespace kite {

namespace {

namespace avx2 = packed::avx2;
namespace avxvnni = packed::avxvnni;
namespace avx512 = packed::avx512;
namespace amx = packed::amx;

// Columns per instruction set: {scalar, avx2, avxvnni, avx512, amx}.
constexpr std::array<WeightKernels, 15> kTable{{
    {TensorType::F32,
     &kActivationF32,
     dot_reference::f32,
     {nullptr, dot_avx2::f32},
     {nullptr, &avx2::f32, &avxvnni::f32, &avx512::f32, &amx::f32}},
    {TensorType::F16,
     &kActivationF32,
     dot_reference::f16,
     {nullptr, dot_avx2::f16},
     {nullptr, &avx2::f16, &avxvnni::f16, &avx512::f16, &amx::f16}},
    {TensorType::BF16,
     &kActivationBf16,
     dot_reference::bf16,
     {nullptr, dot_avx2::bf16},
     {nullptr, &avx2::bf16, &avxvnni::bf16, &avx512::bf16, &amx::bf16}},
    {TensorType::Q8_0,
     &kActivationQ8_0,
     dot_reference::q8_0,
     {nullptr, dot_avx2::q8_0},
     {nullptr, &avx2::q8_0, &avxvnni::q8_0, &avx512::q8_0, &amx::q8_0}},
    {TensorType::Q4_0,
     &kActivationQ8_0,
     dot_reference::q4_0,
     {nullptr, dot_avx2::q4_0},
     {nullptr, &avx2::q4_0, &avxvnni::q4_0, &avx512::q4_0, &amx::q4_0}},
    {TensorType::Q4_1,
     &kActivationQ8_1,
     dot_reference::q4_1,
     {nullptr, dot_avx2::q4_1},
     {nullptr, &avx2::q4_1, &avxvnni::q4_1, &avx512::q4_1, &amx::q4_1}},
    {TensorType::Q5_0,
     &kActivationQ8_0,
     dot_reference::q5_0,
     {},
     {nullptr, &avx2::q5_0, &avxvnni::q5_0, &avx512::q5_0, &amx::q5_0}},
    {TensorType::Q5_1,
     &kActivationQ8_1,
     dot_reference::q5_1,
     {},
     {nullptr, &avx2::q5_1, &avxvnni::q5_1, &avx512::q5_1, &amx::q5_1}},
    // Packed as Q8_0 blocks (packed_layout.h's packs_as_q8_0): Q8_0's kernels.
    {TensorType::IQ4_NL,
     &kActivationQ8_0,
     dot_reference::iq4_nl,
     {},
     {nullptr, &avx2::q8_0, &avxvnni::q8_0, &avx512::q8_0, &amx::q8_0}},
    {TensorType::Q2_K,
     &kActivationQ8_K,
     dot_reference::q2_k,
     {},
     {nullptr, &avx2::q2_k, &avxvnni::q2_k, &avx512::q2_k, &amx::q2_k}},
    {TensorType::Q3_K,
     &kActivationQ8_K,
     dot_reference::q3_k,
     {},
     {nullptr, &avx2::q3_k, &avxvnni::q3_k, &avx512::q3_k, &amx::q3_k}},
    {TensorType::Q4_K,
     &kActivationQ8_K,
     dot_reference::q4_k,
     {},
     {nullptr, &avx2::q4_k, &avxvnni::q4_k, &avx512::q4_k, &amx::q4_k}},
    {TensorType::Q5_K,
     &kActivationQ8_K,
     dot_reference::q5_k,
     {},
     {nullptr, &avx2::q5_k, &avxvnni::q5_k, &avx512::q5_k, &amx::q5_k}},
    {TensorType::Q6_K,
     &kActivationQ8_K,
     dot_reference::q6_k,
     {},
     {nullptr, &avx2::q6_k, &avxvnni::q6_k, &avx512::q6_k, &amx::q6_k}},
    {TensorType::IQ4_XS, &kActivationQ8_K, dot_reference::iq4_xs, {}, {}},
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

const PackedKernels* packed_kernels(TensorType type, Isa isa) {
    const WeightKernels* k = weight_kernels(type);
    return k ? k->packed[static_cast<int>(isa)] : nullptr;
}

size_t packed_activation_bytes(TensorType type, int64_t cols) {
    size_t bytes = 0;
    if (const WeightKernels* k = weight_kernels(type))
        for (const PackedKernels* p : k->packed)
            if (p) bytes = std::max(bytes, p->activation_bytes(cols));
    return bytes;
}

}  // namespace kite
