// The parts of the packed kernels that every instruction set shares: packing, the kernel
// lookup, the BF16 kernel choice, the portable activation formats and the group loop.
#include "kernels/gemm/packed_gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/throughput_kernels.h"
#include "kernels/gemm/packed_layout.h"
#include "quant/blocks.h"
#include "quant/blocks_k.h"
#include "quant/fp16.h"

namespace kite {

size_t packed_bytes(const WeightMatrix& w, const PackedKernels& k) {
    const int64_t rows = k.rows_per_group;
    return static_cast<size_t>(packed::n_groups(w, rows) * packed::group_bytes(w, rows));
}

PackedBytes allocate_packed(const WeightMatrix& w, const PackedKernels& k) {
    return allocate_huge_pages(packed_bytes(w, k));
}

int64_t packed_groups(const WeightMatrix& w, const PackedKernels& k) {
    return packed::n_groups(w, k.rows_per_group);
}

void pack_groups(const WeightMatrix& w, const PackedKernels& k, int64_t g0, int64_t g1,
                 uint8_t* packed) {
    pack_groups_from(w, k, w.data + g0 * k.rows_per_group * static_cast<int64_t>(w.row_bytes), g0,
                     g1, packed);
}

void pack_groups_from(const WeightMatrix& w, const PackedKernels& k, const uint8_t* rows,
                      int64_t g0, int64_t g1, uint8_t* packed) {
    // The groups' rows packed as a matrix of their own are exactly those groups' bytes.
    const int64_t n = k.rows_per_group;
    WeightMatrix part = w;
    part.data = rows;
    part.rows = std::min(g1 * n, w.rows) - g0 * n;
    packed::pack_into(part, n, packed + g0 * packed::group_bytes(w, n));
}

PackedBytes pack_weights(const WeightMatrix& w, const PackedKernels& k) {
    PackedBytes out = allocate_packed(w, k);
    pack_groups(w, k, 0, packed_groups(w, k), out.get());
    return out;
}

// BF16 product per process: vdpbf16ps where it measured faster than FMA on this CPU.
static std::atomic<Bf16Kernel>& bf16_kernel_choice() {
    static std::atomic<Bf16Kernel> choice{bf16_dot_outruns_fp32_fma() ? Bf16Kernel::Dot
                                                                      : Bf16Kernel::Widen};
    return choice;
}

Bf16Kernel bf16_kernel() {
    return bf16_kernel_choice().load(std::memory_order_relaxed);
}

void set_bf16_kernel(Bf16Kernel kernel) {
    if (kernel == Bf16Kernel::Dot && !cpu_features().avx512_bf16)
        fail("set_bf16_kernel: this CPU has no AVX-512 BF16");
    bf16_kernel_choice().store(kernel, std::memory_order_relaxed);
}

namespace packed {

size_t q8_activation_bytes(int64_t cols) {
    static_assert(sizeof(BlockQ8Sum) == sizeof(BlockQ8_1));
    return static_cast<size_t>(cols / kQK) * sizeof(BlockQ8Sum);
}

size_t k_activation_bytes(int64_t cols) {
    return static_cast<size_t>(cols / kQK_K) * sizeof(BlockQ8_K);
}

size_t bf16_widened_activation_bytes(int64_t cols) {
    return static_cast<size_t>(bf16_pairs(cols)) * 2 * sizeof(float);
}

void prepare_bf16_widened_activation(const float* x, uint8_t* dst, int64_t cols) {
    auto* out = reinterpret_cast<float*>(dst);
    std::transform(x, x + cols, out, [](float v) { return bf16_to_f32(f32_to_bf16(v)); });
    if (cols % 2) out[cols] = 0.0f;
}

// Groups converted once for all the token tiles of a long prefill (TilePlan::convert). One
// buffer per thread, grown at the first long matmul and kept.
static const uint8_t* converted_groups(const TilePlan& plan, const WeightMatrix& w, int64_t g,
                                       int64_t groups) {
    thread_local std::vector<uint8_t> buffer;
    const auto n = static_cast<size_t>(groups * plan.converted_group_bytes(w));
    if (buffer.size() < n) buffer.resize(n);
    plan.convert(w, w.packed + g * group_bytes(w, plan.rows_per_group), buffer.data(), groups);
    return buffer.data();
}

void run_tiles(const TilePlan& plan, const WeightMatrix& w, const uint8_t* act, size_t act_bytes,
               int64_t n_tokens, float* y, int64_t group_begin, int64_t group_end) {
    const bool convert = plan.convert && n_tokens >= plan.convert_tokens;
    const TileTable& t = convert ? *plan.converted_tiles : *plan.tiles;
    // Only the first token tile over a range of groups reads the weights from memory.
    const auto& first = n_tokens <= kStreamTokens && t.stream[0][0] ? t.stream : t.fn;
    const int64_t want = plan.tile_groups(n_tokens);
    for (int64_t g = group_begin; g < group_end;) {
        const int64_t left = group_end - g;
        const int64_t groups = left >= want ? want : (left >= 2 ? 2 : 1);
        const int level = groups == 4 ? 2 : static_cast<int>(groups - 1);
        const uint8_t* bytes = convert ? converted_groups(plan, w, g, groups)
                                       : w.packed + g * group_bytes(w, plan.rows_per_group);
        for (int64_t tok = 0; tok < n_tokens; tok += t.tokens) {
            const auto& fn = tok == 0 ? first : t.fn;
            fn[level][std::min(t.tokens, n_tokens - tok) - 1](w, bytes, act, act_bytes, g, tok, y);
        }
        g += groups;
    }
}

}  // namespace packed

}  // namespace kite
