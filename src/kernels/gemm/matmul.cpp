#include "kernels/gemm/matmul.h"

#include <algorithm>
#include <span>

#include "kernels/gemm/packed_gemm.h"
#include "kernels/gemm/weight_kernels.h"

namespace kite {

size_t matmul_scratch_bytes(TensorType weight_type, int64_t cols, int64_t n_tokens) {
    const size_t row = std::max(weight_kernels(weight_type)->activation->row_bytes(cols),
                                packed_activation_bytes(weight_type, cols));
    return row * n_tokens;
}

size_t matmul_scratch_bytes_any_type(int64_t cols, int64_t n_tokens) {
    size_t most = 0;
    for (const WeightKernels& k : weight_kernel_table())
        most = std::max(most, matmul_scratch_bytes(k.type, cols, n_tokens));
    return most;
}

namespace {

// Quantizes (or copies) activation rows [begin, end) once; every weight row then reuses them.
void prepare_rows(const WeightMatrix& w, const float* x, uint8_t* act, int64_t begin, int64_t end) {
    const ActivationFormat& format = *weight_kernels(w.type)->activation;
    const size_t act_bytes = format.row_bytes(w.cols);
    for (int64_t t = begin; t < end; ++t)
        format.prepare(x + t * w.cols, act + t * act_bytes, w.cols);
}

void multiply_rows(const WeightMatrix& w, const uint8_t* act, int64_t n_tokens, float* y, DotFn dot,
                   int64_t row_begin, int64_t row_end) {
    const size_t act_bytes = weight_kernels(w.type)->activation->row_bytes(w.cols);
    for (int64_t r = row_begin; r < row_end; ++r) {
        const uint8_t* wrow = w.data + r * w.row_bytes;
        for (int64_t t = 0; t < n_tokens; ++t)
            y[t * w.rows + r] = dot(wrow, act + t * act_bytes, w.cols);
    }
}

}  // namespace

// Packed weights of one type and width: the activations are prepared once for all of them,
// then every matrix's row groups, in tiles, are one job for the pool.
static void matmul_packed(std::span<const MatmulTarget> targets, const float* x, int64_t n_tokens,
                          uint8_t* scratch, ThreadPool& pool) {
    const WeightMatrix& first = *targets[0].w;
    const PackedKernels& k = *first.kernels;
    size_t act_bytes = k.activation_bytes(first.cols);
    const uint8_t* act = scratch;
    if (act_bytes == 0) {  // float weights read x as it is
        act = reinterpret_cast<const uint8_t*>(x);
        act_bytes = first.cols * sizeof(float);
    } else {
        pool.parallel_for(n_tokens, [&](int64_t begin, int64_t end, int) {
            for (int64_t t = begin; t < end; ++t)
                k.prepare_activation(x + t * first.cols, scratch + t * act_bytes, first.cols);
        });
    }
    const int64_t tile = k.tile_groups(n_tokens), rows = k.rows_per_group;
    auto tiles_of = [&](const WeightMatrix& w) {
        return ((w.rows + rows - 1) / rows + tile - 1) / tile;
    };
    int64_t total = 0;
    for (const MatmulTarget& t : targets) total += tiles_of(*t.w);
    pool.parallel_for(total, [&](int64_t begin, int64_t end, int) {
        int64_t offset = 0;  // tiles of the matrices before this one
        for (const MatmulTarget& t : targets) {
            const int64_t n = tiles_of(*t.w), groups = (t.w->rows + rows - 1) / rows;
            const int64_t lo = std::max(begin, offset), hi = std::min(end, offset + n);
            if (lo < hi)
                k.gemm(*t.w, act, act_bytes, n_tokens, t.y, (lo - offset) * tile,
                       std::min(groups, (hi - offset) * tile));
            offset += n;
        }
    });
}

static bool same_input(std::span<const MatmulTarget> targets) {
    for (const MatmulTarget& t : targets)
        if (t.w->kernels != targets[0].w->kernels || t.w->cols != targets[0].w->cols ||
            !t.w->packed)
            return false;
    return true;
}

void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, void* scratch,
            ThreadPool& pool) {
    auto* act = static_cast<uint8_t*>(scratch);
    if (w.packed) {
        const MatmulTarget target{&w, y};
        return matmul_packed({&target, 1}, x, n_tokens, act, pool);
    }
    pool.parallel_for(
        n_tokens, [&](int64_t begin, int64_t end, int) { prepare_rows(w, x, act, begin, end); });
    const DotFn dot = dot_for(*weight_kernels(w.type), active_isa());
    pool.parallel_for(w.rows, [&](int64_t begin, int64_t end, int) {
        multiply_rows(w, act, n_tokens, y, dot, begin, end);
    });
}

void matmul_shared_input(std::span<const MatmulTarget> targets, const float* x, int64_t n_tokens,
                         void* scratch, ThreadPool& pool) {
    if (same_input(targets))
        return matmul_packed(targets, x, n_tokens, static_cast<uint8_t*>(scratch), pool);
    for (const MatmulTarget& t : targets) matmul(*t.w, x, n_tokens, t.y, scratch, pool);
}

void matmul_reference(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                      void* scratch) {
    auto* act = static_cast<uint8_t*>(scratch);
    prepare_rows(w, x, act, 0, n_tokens);
    multiply_rows(w, act, n_tokens, y, weight_kernels(w.type)->dot_reference, 0, w.rows);
}

}  // namespace kite
