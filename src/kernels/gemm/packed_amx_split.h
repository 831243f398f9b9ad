// How every AMX kernel splits a call: its whole 16-token tiles run on the tiles, the tokens
// after them (all of a decode step, which is bound by memory bandwidth) on the AVX-512
// kernels the level extends, which read the same activation rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/gemm/matmul.h"
#include "kernels/gemm/packed_gemm.h"

namespace kite::packed::amx {

constexpr int64_t kTileTokens = 16;  // tokens (rows of the activation tile) per tile product

// Calls tiles(tiled) for the first `tiled` tokens (whole tiles; none where use_tiles is false)
// and base's gemm for the rest, on the groups [group_begin, group_end).
template <typename Tiles>
void split_tiles_and_rest(const PackedKernels& base, bool use_tiles, const WeightMatrix& w,
                          const uint8_t* act, size_t act_bytes, int64_t n_tokens, float* y,
                          int64_t group_begin, int64_t group_end, Tiles&& tiles) {
    const int64_t tiled = use_tiles ? n_tokens / kTileTokens * kTileTokens : 0;
    if (tiled < n_tokens)
        base.gemm(w, act + tiled * act_bytes, act_bytes, n_tokens - tiled, y + tiled * w.rows,
                  group_begin, group_end);
    if (tiled > 0) tiles(tiled);
}

}  // namespace kite::packed::amx
