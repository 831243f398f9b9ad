// Register-tiled matrix kernels: a tile of up to 4 weight rows times up to 4 tokens is
// computed together, so each unpacked weight block serves 4 tokens and each activation
// block serves 4 rows (the plain dot-product loop re-reads both for every pair).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"

namespace kite {

// Computes y[t * w.rows + r] for rows [row_begin, row_end) and all n_tokens, from
// activations prepared for w.type (act_bytes per token).
using GemmFn = void (*)(const WeightMatrix& w, const uint8_t* act, size_t act_bytes,
                        int64_t n_tokens, float* y, int64_t row_begin, int64_t row_end);

// The tiled kernel for this weight type on this CPU, or nullptr (then use dot products).
GemmFn gemm_fast(TensorType weight_type);

// Rows per tile: callers split work on multiples of this.
constexpr int64_t kGemmRowTile = 4;

}  // namespace kite
