// The tile kernels against their scalar reference, block by block: a tile's rows with ranges
// that start and end inside a block, cover it, miss it, or hold one position, for head
// dimensions from one vector to kMaxHeadDim, and row counts that leave a partial group; and
// the row conversion.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/attention/tiled_attention.h"
#include "kernels/cpu/isa.h"
#include "quant/convert.h"

namespace kite {
namespace {

#if defined(__x86_64__)
struct RowState {
    std::vector<float> o, m, l;
    RowState(int64_t rows, int64_t d)
        : o(rows * d, 0.0f), m(rows, -std::numeric_limits<float>::infinity()), l(rows, 0.0f) {}
};

// A level's tile kernels against the scalar one, for the head dimensions `dims`, within
// `tolerance` of the outputs (values of about 1). A kernel that multiplies pairs of bf16 parts
// (`bf16`: 16 significant bits, against f32's 24) gets a wider tolerance for the scores too.
void expect_tile_block_matches_scalar(TileKernels kernels, std::vector<int64_t> dims,
                                      bool bf16 = false, float tolerance = 1e-5f) {
    std::mt19937 rng(21);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t d : dims)
        for (int64_t rows : {1, 6, 13, 16, 29}) {
            // Three blocks of positions 0..191; row r's range differs per row.
            const int64_t n_blocks = 3;
            std::vector<float> q(rows * d), kt(n_blocks * d * kTileKeys),
                v(n_blocks * kTileKeys * d);
            for (float& x : q) x = 0.3f * normal(rng);
            for (float& x : kt) x = normal(rng);
            for (float& x : v) x = normal(rng);
            std::vector<int64_t> first(rows), last(rows);
            for (int64_t r = 0; r < rows; ++r) {
                const int64_t kinds[][2] = {{0, 191}, {5, 70},   {64, 64},  {130, 140},
                                            {0, 0},   {63, 128}, {100, 191}};
                first[r] = kinds[r % 7][0], last[r] = kinds[r % 7][1];
            }
            RowState scalar(rows, d), simd(rows, d);
            for (RowState* state : {&scalar, &simd}) {
                const bool ref = state == &scalar;
                const TileRows tile{q.data(),        rows,           d,
                                    first.data(),    last.data(),    state->o.data(),
                                    state->m.data(), state->l.data()};
                if (!ref && kernels.prepare != nullptr) kernels.prepare(tile);
                for (int64_t b = 0; b < n_blocks; ++b) {
                    const KeyBlock block{kt.data() + b * d * kTileKeys,
                                         v.data() + b * kTileKeys * d, b * kTileKeys};
                    (ref ? tile_block_scalar : kernels.block)(tile, block);
                }
            }
            // Scores of 16 bits: about 2^-17 of sum |q_i k_i| (up to 0.3 * 0.8 * d here).
            const double score_tolerance = bf16 ? 2e-6 * d : 1e-5;
            for (int64_t r = 0; r < rows; ++r) {
                ASSERT_NEAR(simd.m[r], scalar.m[r], score_tolerance) << "d " << d << " row " << r;
                ASSERT_NEAR(simd.l[r], scalar.l[r], 1e-4 * scalar.l[r]) << "d " << d;
                for (int64_t i = 0; i < d; ++i)
                    ASSERT_NEAR(simd.o[r * d + i] / simd.l[r], scalar.o[r * d + i] / scalar.l[r],
                                tolerance)
                        << "d " << d << " rows " << rows << " row " << r << " element " << i;
            }
        }
}

TEST(TileBlock, Avx512MatchesScalarReference) {
    if (detected_isa() < Isa::Avx512) GTEST_SKIP() << "no AVX-512";
    expect_tile_block_matches_scalar({tile_block_avx512, kv_row_avx512}, {16, 64, 80, 128, 256});
}

TEST(TileBlock, AmxMatchesScalarReference) {
    if (choose_tile_kernels(64).block != tile_block_amx)
        GTEST_SKIP() << "no AMX-BF16 tiles (CPU, OS permission or KITE_ISA)";
    expect_tile_block_matches_scalar(choose_tile_kernels(64), {64, 128, 256}, true, 1e-4f);
}

TEST(TileBlock, Avx2MatchesScalarReference) {
    if (detected_isa() < Isa::Avx2) GTEST_SKIP() << "no AVX2";
    expect_tile_block_matches_scalar({tile_block_avx2, kv_row_avx2}, {8, 64, 80, 128, 256});
}

// F16 rows converted in registers equal the scalar conversion, for normal, subnormal, zero,
// infinite and negative halves; other types go through it.
void expect_rows_match_dequantize_row(KvRowFn row) {
    std::vector<uint16_t> halves(64);
    for (size_t i = 0; i < halves.size(); ++i)
        halves[i] = static_cast<uint16_t>((i * 1031 + 1) & 0xfbff);  // no NaN
    halves[0] = 0x0001, halves[1] = 0x7c00, halves[2] = 0x8000, halves[3] = 0xbc00;
    std::vector<float> expected(64), out(64);
    dequantize_row(TensorType::F16, halves.data(), expected.data(), 64);
    row(TensorType::F16, halves.data(), out.data(), 64);
    for (size_t i = 0; i < 64; ++i) ASSERT_EQ(out[i], expected[i]) << i;
}

TEST(TileBlock, Avx512RowsMatchDequantizeRow) {
    if (detected_isa() < Isa::Avx512) GTEST_SKIP() << "no AVX-512";
    expect_rows_match_dequantize_row(kv_row_avx512);
}

TEST(TileBlock, Avx2RowsMatchDequantizeRow) {
    if (detected_isa() < Isa::Avx2) GTEST_SKIP() << "no AVX2";
    expect_rows_match_dequantize_row(kv_row_avx2);
}
#endif

}  // namespace
}  // namespace kite
