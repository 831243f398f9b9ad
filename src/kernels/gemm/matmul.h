// Matrix products against weights used in place from the model file: y = x W^T.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/thread_pool.h"
#include "gguf/tensor_type.h"

namespace kite {

struct PackedKernels;

// A weight matrix as stored in GGUF: `rows` rows of `cols` values, each row contiguous.
struct WeightMatrix {
    TensorType type = TensorType::F32;
    const uint8_t* data = nullptr;
    int64_t rows = 0;
    int64_t cols = 0;
    size_t row_bytes = 0;
    const uint8_t* packed = nullptr;         // the same rows repacked (packed_gemm.h), if any
    const PackedKernels* kernels = nullptr;  // the kernels `packed` was packed for
};

// Scratch bytes matmul needs to prepare n_tokens activation rows of `cols` values.
size_t matmul_scratch_bytes(TensorType weight_type, int64_t cols, int64_t n_tokens);
// The most of that any weight type needs, at any level: enough for every matmul of a model
// whose inputs are at most `cols` wide.
size_t matmul_scratch_bytes_any_type(int64_t cols, int64_t n_tokens);

// y[t * w.rows + r] = dot(row r of w, x[t * w.cols ...]) for t < n_tokens.
// `scratch` holds matmul_scratch_bytes(...) bytes. Work is split over weight rows so each
// weight byte is read once per call, whatever n_tokens is.
void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, void* scratch,
            ThreadPool& pool);

// One matrix product of several that read the same input.
struct MatmulTarget {
    const WeightMatrix* w;
    float* y;
};

// matmul(*t.w, x, n_tokens, t.y, ...) for each target. When all are packed with one type and
// width (Q, K and V; gate and up), x is prepared once and one job covers all their rows.
void matmul_shared_input(std::span<const MatmulTarget> targets, const float* x, int64_t n_tokens,
                         void* scratch, ThreadPool& pool);

// The same product with the scalar reference dot products (tests compare the two).
void matmul_reference(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                      void* scratch);

}  // namespace kite
