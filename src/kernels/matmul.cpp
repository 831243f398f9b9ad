#include "kernels/matmul.h"

#include <algorithm>
#include <cstdlib>

#include "kernels/gemm.h"
#include "kernels/vec_dot.h"

namespace kite {

size_t matmul_scratch_bytes(TensorType weight_type, int64_t cols, int64_t n_tokens) {
    return activation_row_bytes(activation_format(weight_type), cols) * n_tokens;
}

namespace {

// Quantizes (or copies) each activation row once; every weight row then reuses them.
void prepare_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, uint8_t* act) {
    const ActFormat format = activation_format(w.type);
    const size_t act_bytes = activation_row_bytes(format, w.cols);
    for (int64_t t = 0; t < n_tokens; ++t)
        prepare_activation(format, x + t * w.cols, act + t * act_bytes, w.cols);
}

void multiply_rows(const WeightMatrix& w, const uint8_t* act, int64_t n_tokens, float* y, DotFn dot,
                   int64_t row_begin, int64_t row_end) {
    const size_t act_bytes = activation_row_bytes(activation_format(w.type), w.cols);
    for (int64_t r = row_begin; r < row_end; ++r) {
        const uint8_t* wrow = w.data + r * w.row_bytes;
        for (int64_t t = 0; t < n_tokens; ++t)
            y[t * w.rows + r] = dot(wrow, act + t * act_bytes, w.cols);
    }
}

}  // namespace

// KITE_REFERENCE_KERNELS=1 runs the scalar references instead (to bisect numerical issues).
static bool use_reference_kernels() {
    static const bool on = [] {
        const char* v = std::getenv("KITE_REFERENCE_KERNELS");
        return v && *v && *v != '0';
    }();
    return on;
}

void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, void* scratch,
            ThreadPool& pool) {
    if (use_reference_kernels()) return matmul_reference(w, x, n_tokens, y, scratch);
    auto* act = static_cast<uint8_t*>(scratch);
    pool.parallel_for(n_tokens, [&](int64_t begin, int64_t end, int) {
        const ActFormat format = activation_format(w.type);
        const size_t act_bytes = activation_row_bytes(format, w.cols);
        for (int64_t t = begin; t < end; ++t)
            prepare_activation(format, x + t * w.cols, act + t * act_bytes, w.cols);
    });
    if (const GemmFn gemm = gemm_fast(w.type)) {
        const size_t act_bytes = activation_row_bytes(activation_format(w.type), w.cols);
        const int64_t tiles = (w.rows + kGemmRowTile - 1) / kGemmRowTile;
        pool.parallel_for(tiles, [&](int64_t begin, int64_t end, int) {
            gemm(w, act, act_bytes, n_tokens, y, begin * kGemmRowTile,
                 std::min(w.rows, end * kGemmRowTile));
        });
        return;
    }
    const DotFn dot = dot_fast(w.type);
    pool.parallel_for(w.rows, [&](int64_t begin, int64_t end, int) {
        multiply_rows(w, act, n_tokens, y, dot, begin, end);
    });
}

void matmul_reference(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                      void* scratch) {
    auto* act = static_cast<uint8_t*>(scratch);
    prepare_rows(w, x, n_tokens, act);
    multiply_rows(w, act, n_tokens, y, dot_reference(w.type), 0, w.rows);
}

}  // namespace kite
