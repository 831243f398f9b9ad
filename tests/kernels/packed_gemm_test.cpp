// The packed kernels of every instruction set this CPU runs (AVX2, AVX-VNNI, AVX-512, AMX) against
// the scalar reference matmul, on random data over many shapes: row counts off the group size,
// odd block and column counts, and token counts that run every tile width and the conversion
// of float groups for long prefills.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/thread_pool.h"
#include "gguf/gguf_file.h"
#include "kernels/cpu/isa.h"
#include "kernels/gemm/matmul.h"
#include "kernels/gemm/packed_gemm.h"
#include "kernels/gemm/packed_k_layout.h"
#include "kernels/gemm/weight_kernels.h"
#include "quant/blocks.h"
#include "quant/blocks_k.h"
#include "quant/blocks_q5.h"
#include "quant/convert.h"
#include "quant/fp16.h"
#include "random_weights.h"
#include "test_paths.h"

namespace kite {
namespace {

constexpr TensorType kTypes[] = {
    TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q8_0,   TensorType::Q4_0,
    TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::IQ4_NL, TensorType::Q2_K,
    TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};

using packed::is_k_quant;

// Column counts to test: some blocks, an odd number of them, and a long row.
std::vector<int64_t> column_counts(TensorType t) {
    if (is_k_quant(t)) return {256, 1280};
    if (t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16)
        return {1, 33, 201, 32, 96, 160, 4096};
    return {32, 96, 160, 4096};
}

// The levels with packed kernels that this CPU can run.
std::vector<Isa> packed_isas() {
    std::vector<Isa> out;
    for (Isa isa : {Isa::Avx2, Isa::AvxVnni, Isa::Avx512, Isa::Amx})
        if (isa <= detected_isa()) out.push_back(isa);
    return out;
}

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

// A weight matrix in the file's layout, its dequantized values, and its packed bytes.
struct TestMatrix {
    std::vector<uint8_t> data;
    std::vector<float> values;  // rows x cols, dequantized
    PackedBytes packed;
    WeightMatrix w;

    TestMatrix(TensorType type, int64_t rows, int64_t cols, const PackedKernels& k,
               std::mt19937& rng)
        : data(row_bytes(type, cols) * rows), values(rows * cols) {
        const size_t rb = row_bytes(type, cols);
        for (int64_t r = 0; r < rows; ++r) {
            const std::vector<uint8_t> row = test::random_weight_row(type, cols, rng);
            std::memcpy(&data[r * rb], row.data(), rb);
        }
        init(type, rows, cols, k);
    }

    // From raw file bytes (rows x row_bytes).
    TestMatrix(TensorType type, int64_t rows, int64_t cols, const PackedKernels& k,
               std::vector<uint8_t> bytes)
        : data(std::move(bytes)), values(rows * cols) {
        init(type, rows, cols, k);
    }

    void init(TensorType type, int64_t rows, int64_t cols, const PackedKernels& k) {
        const size_t rb = row_bytes(type, cols);
        for (int64_t r = 0; r < rows; ++r)
            dequantize_row(type, &data[r * rb], &values[r * cols], cols);
        w = {type, data.data(), rows, cols, rb};
        packed = pack_weights(w, k);
        w.packed = packed.get();
        w.kernels = &k;
    }
};

// How far a product may be from the reference, as a fraction of the sum of its terms'
// magnitudes: float rounding (activation quantization is the same in both). The AMX tiles
// multiply F32 and F16 weights as sums of bf16 parts (packed_gemm_amx_float.cpp), which leave
// out x_lo * w_lo: up to 2^-16 of each term.
double relative_tolerance(const PackedKernels& k, TensorType type) {
    const bool split = k.isa == Isa::Amx && (type == TensorType::F32 || type == TensorType::F16);
    return split ? 3e-5 : 1e-5;
}

void expect_matches_reference(const TestMatrix& m, const std::vector<float>& x, int64_t n_tokens,
                              const std::vector<float>& y, const std::string& what) {
    const double relative = relative_tolerance(*m.w.kernels, m.w.type);
    const WeightMatrix& w = m.w;
    WeightMatrix unpacked = w;
    unpacked.packed = nullptr;
    unpacked.kernels = nullptr;
    std::vector<float> ref(n_tokens * w.rows);
    std::vector<uint8_t> scratch(matmul_scratch_bytes(w.type, w.cols, n_tokens));
    matmul_reference(unpacked, x.data(), n_tokens, ref.data(), scratch.data());
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t r = 0; r < w.rows; ++r) {
            double magnitude = 0;
            for (int64_t k = 0; k < w.cols; ++k)
                magnitude += std::fabs(double(m.values[r * w.cols + k]) * x[t * w.cols + k]);
            const int64_t i = t * w.rows + r;
            ASSERT_NEAR(y[i], ref[i], relative * magnitude + 1e-6)
                << what << " row " << r << " token " << t;
        }
}

std::string describe(const PackedKernels& k, TensorType type, int64_t rows, int64_t cols,
                     int64_t tokens) {
    return std::string(isa_name(k.isa)) + " " + tensor_type_name(type) + " rows " +
           std::to_string(rows) + " cols " + std::to_string(cols) + " tokens " +
           std::to_string(tokens);
}

TEST(PackedGemm, EveryIsaAndTypeMatchesReference) {
    std::mt19937 rng(17);
    ThreadPool pool(2);
    for (Isa isa : packed_isas())
        for (TensorType type : kTypes) {
            const PackedKernels* k = packed_kernels(type, isa);
            ASSERT_NE(k, nullptr) << isa_name(isa) << " " << tensor_type_name(type);
            ASSERT_EQ(k->isa, isa);
            for (int64_t rows : {1, 7, 9, 17, 33})
                for (int64_t cols : column_counts(type)) {
                    const TestMatrix m(type, rows, cols, *k, rng);
                    // From 16 (AVX2) or 64 (AVX-512) tokens quantized groups are unpacked, and
                    // from 64 float groups converted to F32: 17 and 64..71 end those calls'
                    // tiles with every remainder of 3, 4 and 6 tokens.
                    const std::vector<int64_t> token_counts =
                        cols >= 4096 ? std::vector<int64_t>{1, 5, 70}
                                     : std::vector<int64_t>{1,  2,  3,  4,  5,  6,  7,  8,  9, 13,
                                                            17, 64, 65, 66, 67, 68, 69, 70, 71};
                    for (int64_t T : token_counts) {
                        const std::vector<float> x = random_floats(T * cols, rng);
                        std::vector<float> y(T * rows);
                        std::vector<uint8_t> scratch(matmul_scratch_bytes(type, cols, T));
                        matmul(m.w, x.data(), T, y.data(), scratch.data(), pool);
                        expect_matches_reference(m, x, T, y, describe(*k, type, rows, cols, T));
                        if (HasFatalFailure()) return;
                    }
                }
        }
}

// Load packs ranges of groups on several threads: any split gives the bytes of one pass.
TEST(PackedGemm, PackingInRangesOfGroupsEqualsOnePass) {
    std::mt19937 rng(29);
    for (Isa isa : packed_isas())
        for (TensorType type : kTypes) {
            const PackedKernels& k = *packed_kernels(type, isa);
            const int64_t cols = column_counts(type).back(), rows = 5 * k.rows_per_group + 3;
            const TestMatrix m(type, rows, cols, k, rng);
            const int64_t groups = packed_groups(m.w, k);
            ASSERT_EQ(groups, 6);
            const PackedBytes parts = allocate_packed(m.w, k);
            for (auto [g0, g1] : {std::pair<int64_t, int64_t>{4, 6}, {0, 1}, {1, 4}})
                pack_groups(m.w, k, g0, g1, parts.get());
            // Both mappings have the same length, zero past the packed bytes.
            ASSERT_EQ(parts.get_deleter().bytes, m.packed.get_deleter().bytes);
            EXPECT_EQ(std::memcmp(parts.get(), m.packed.get(), parts.get_deleter().bytes), 0)
                << isa_name(isa) << " " << tensor_type_name(type);
        }
}

TEST(PackedGemm, SharedInputMatchesReference) {
    // Q, K and V shapes off the group sizes: one prepared input, one job over all their rows.
    std::mt19937 rng(5);
    ThreadPool pool(2);
    for (Isa isa : packed_isas())
        for (TensorType type : kTypes) {
            const int64_t cols = is_k_quant(type) ? 512 : 160;
            const PackedKernels& k = *packed_kernels(type, isa);
            std::vector<TestMatrix> mats;
            for (int64_t rows : {33, 9, 17}) mats.emplace_back(type, rows, cols, k, rng);
            for (int64_t T : {1, 3, 8, 70}) {
                const std::vector<float> x = random_floats(T * cols, rng);
                std::vector<std::vector<float>> y;
                std::vector<MatmulTarget> targets;
                for (const TestMatrix& m : mats) y.emplace_back(T * m.w.rows);
                for (size_t i = 0; i < mats.size(); ++i)
                    targets.push_back({&mats[i].w, y[i].data()});
                std::vector<uint8_t> scratch(matmul_scratch_bytes(type, cols, T));
                matmul_shared_input(targets, x.data(), T, scratch.data(), pool);
                for (size_t i = 0; i < mats.size(); ++i)
                    expect_matches_reference(mats[i], x, T, y[i],
                                             describe(k, type, mats[i].w.rows, cols, T) +
                                                 " matrix " + std::to_string(i));
                if (HasFatalFailure()) return;
            }
        }
}

// Bytes of `n` blocks of `Block` whose bytes (after its f16 scale fields, set to 1) are all
// 0xff or all 0x00: every weight at the top of its range or the bottom.
template <typename Block>
void fill_extreme(uint8_t* out, int64_t n, size_t scale_fields, std::mt19937& rng) {
    std::bernoulli_distribution coin;
    const uint16_t one = f32_to_f16(1.0f);
    for (int64_t b = 0; b < n; ++b) {
        uint8_t* blk = out + b * sizeof(Block);
        for (size_t i = 0; i < sizeof(Block); ++i) blk[i] = coin(rng) ? 0xff : 0x00;
        for (size_t f = 0; f < scale_fields; ++f) std::memcpy(blk + 2 * f, &one, 2);
    }
}

// Blocks whose every weight is one of the type's extremes, against activations that quantize to
// +-127: the integer sums the AVX2 kernels keep in int16 come closest to overflowing.
std::vector<uint8_t> extreme_blocks(TensorType type, int64_t rows, int64_t cols,
                                    std::mt19937& rng) {
    std::vector<uint8_t> bytes(row_bytes(type, cols) * rows);
    std::bernoulli_distribution coin;
    const uint16_t one = f32_to_f16(1.0f);
    const int64_t n_blocks = rows * cols / kQK;
    switch (type) {
        case TensorType::Q5_0:
            fill_extreme<BlockQ5_0>(bytes.data(), n_blocks, 1, rng);
            return bytes;
        case TensorType::Q2_K:  // its f16 d and dmin are the last fields
            fill_extreme<BlockQ2_K>(bytes.data(), n_blocks / 8, 0, rng);
            for (int64_t b = 0; b < n_blocks / 8; ++b)
                reinterpret_cast<BlockQ2_K*>(bytes.data())[b].d =
                    reinterpret_cast<BlockQ2_K*>(bytes.data())[b].dmin = one;
            return bytes;
        case TensorType::Q3_K:  // scales 31 or -32
            fill_extreme<BlockQ3_K>(bytes.data(), n_blocks / 8, 0, rng);
            for (int64_t b = 0; b < n_blocks / 8; ++b)
                reinterpret_cast<BlockQ3_K*>(bytes.data())[b].d = one;
            return bytes;
        case TensorType::Q4_K:
            fill_extreme<BlockQ4_K>(bytes.data(), n_blocks / 8, 2, rng);
            return bytes;
        case TensorType::Q5_K:
            fill_extreme<BlockQ5_K>(bytes.data(), n_blocks / 8, 2, rng);
            return bytes;
        case TensorType::Q6_K: {
            // Scales 127 or -128; its f16 d is the last field.
            fill_extreme<BlockQ6_K>(bytes.data(), n_blocks / 8, 0, rng);
            for (int64_t b = 0; b < n_blocks / 8; ++b) {
                auto* blk = reinterpret_cast<BlockQ6_K*>(bytes.data()) + b;
                for (int8_t& s : blk->scales) s = coin(rng) ? 127 : -128;
                blk->d = one;
            }
            return bytes;
        }
        default:
            break;
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
        if (type == TensorType::Q8_0) {
            BlockQ8_0 blk{one, {}};
            for (int8_t& q : blk.qs) q = coin(rng) ? 127 : -128;
            std::memcpy(&bytes[b * sizeof blk], &blk, sizeof blk);
        } else if (type == TensorType::Q4_0) {
            BlockQ4_0 blk{one, {}};  // nibble 0 is -8, 15 is 7
            for (uint8_t& q : blk.qs) q = coin(rng) ? 0x00 : 0xff;
            std::memcpy(&bytes[b * sizeof blk], &blk, sizeof blk);
        } else {
            BlockQ4_1 blk{one, f32_to_f16(-2.0f), {}};
            for (uint8_t& q : blk.qs) q = coin(rng) ? 0xff : 0x0f;
            std::memcpy(&bytes[b * sizeof blk], &blk, sizeof blk);
        }
    }
    return bytes;
}

TEST(PackedGemm, ExtremeQuantsDoNotSaturate) {
    std::mt19937 rng(23);
    ThreadPool pool(2);
    const int64_t rows = 24, cols = 256;
    for (Isa isa : packed_isas())
        for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1,
                                TensorType::Q5_0, TensorType::Q2_K, TensorType::Q3_K,
                                TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
            const PackedKernels& k = *packed_kernels(type, isa);
            const TestMatrix m(type, rows, cols, k, extreme_blocks(type, rows, cols, rng));
            for (int64_t T : {1, 4, 64}) {  // 64: the unpacked groups' tiles
                // Each activation block all +-1 (every quant +-127), or all +1 (every quant +127:
                // the largest sums of levels times quants; for the K-quants' 256-value blocks,
                // all of one sign: -127 each).
                std::vector<float> x(T * cols);
                std::bernoulli_distribution coin;
                const size_t block = is_k_quant(type) ? 256 : kQK;
                for (size_t i = 0; i < x.size(); ++i)
                    x[i] = (i / block) % 2 ? 1.0f : (coin(rng) ? 1.0f : -1.0f);
                std::vector<float> y(T * rows);
                std::vector<uint8_t> scratch(matmul_scratch_bytes(type, cols, T));
                matmul(m.w, x.data(), T, y.data(), scratch.data(), pool);
                expect_matches_reference(m, x, T, y, describe(k, type, rows, cols, T));
            }
        }
}

TEST(PackedGemm, KQuantActivationsAreTheReferenceBytes) {
    if (detected_isa() < Isa::Avx2) GTEST_SKIP() << "no AVX2";
    std::mt19937 rng(31);
    const int64_t cols = 5 * 256;
    for (int trial = 0; trial < 20; ++trial) {
        std::vector<float> x = random_floats(cols, rng);
        // Block 1: the largest magnitude twice with both signs (the first one sets the sign);
        // block 2: all zero; block 3: rounding ties.
        x[256 + 7] = -9.0f;
        x[256 + 200] = 9.0f;
        std::fill(x.begin() + 512, x.begin() + 768, 0.0f);
        // The scale there is 1: every other value lies halfway between two quants.
        for (int j = 0; j < 256; ++j) x[768 + j] = static_cast<float>(j % 254 - 127) + 0.5f;
        x[768] = -127.0f;
        std::vector<BlockQ8_K> ref(cols / 256), got(cols / 256);
        quantize_row_q8_k(x.data(), ref.data(), cols);
        packed::quantize_q8_k(x.data(), reinterpret_cast<uint8_t*>(got.data()), cols);
        for (size_t b = 0; b < ref.size(); ++b) {
            EXPECT_EQ(got[b].d, ref[b].d) << "block " << b;
            for (int j = 0; j < 256; ++j) ASSERT_EQ(got[b].qs[j], ref[b].qs[j]) << b << " " << j;
            for (int j = 0; j < 16; ++j)
                ASSERT_EQ(got[b].bsums[j], ref[b].bsums[j]) << b << " " << j;
        }
    }
}

// Rows of real Q4_K_M tensors (Qwen2.5-Coder-0.5B: Q4_K, Q6_K and, 896 columns not filling
// 256-value blocks, Q5_0), where the file is installed.
TEST(PackedGemm, RealTensorsMatchReference) {
    const std::string path = test::find_real_model("qwen2.5-coder-0.5b");
    if (path.empty()) GTEST_SKIP() << "qwen2.5-coder-0.5b is not installed";
    const auto file = GgufFile::open(path);
    std::mt19937 rng(41);
    ThreadPool pool(2);
    for (TensorType type : {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q5_0}) {
        const GgufTensor* t = nullptr;
        for (const GgufTensor& candidate : file->tensors())
            if (candidate.type() == type && candidate.name.starts_with("blk.")) {
                t = &candidate;
                break;
            }
        ASSERT_NE(t, nullptr) << tensor_type_name(type);
        const int64_t cols = static_cast<int64_t>(t->dims[0]), rows = 40;
        const size_t rb = row_bytes(type, cols);
        for (Isa isa : packed_isas()) {
            const PackedKernels& k = *packed_kernels(type, isa);
            const TestMatrix m(type, rows, cols, k,
                               std::vector<uint8_t>(t->data, t->data + rows * rb));
            for (int64_t T : {1, 5}) {
                const std::vector<float> x = random_floats(T * cols, rng);
                std::vector<float> y(T * rows);
                std::vector<uint8_t> scratch(matmul_scratch_bytes(type, cols, T));
                matmul(m.w, x.data(), T, y.data(), scratch.data(), pool);
                expect_matches_reference(
                    m, x, T, y, std::string(t->name) + " " + describe(k, type, rows, cols, T));
            }
        }
    }
}

TEST(PackedGemm, LookupHasEveryTypeAtEveryPackedLevel) {
    for (TensorType type : kTypes) {
        EXPECT_EQ(packed_kernels(type, Isa::Scalar), nullptr);
        EXPECT_EQ(packed_kernels(type, Isa::Avx512)->rows_per_group, 16);
        EXPECT_EQ(packed_kernels(type, Isa::AvxVnni)->rows_per_group, 8);
        EXPECT_EQ(packed_kernels(type, Isa::Avx2)->rows_per_group, 8);
    }
    EXPECT_EQ(packed_kernels(TensorType::Q8_0, Isa::Avx2), &packed::avx2::q8_0);
    EXPECT_EQ(packed_kernels(TensorType::BF16, Isa::AvxVnni), &packed::avxvnni::bf16);
}

// Columns for the AMX tiles: int8 tiles take whole blocks; bf16 tiles pad every row to 32
// columns (odd counts, a part step) and convert as many groups at once as fit in 1 MiB
// (about 8 at 4,096 columns).
std::vector<int64_t> amx_column_counts(TensorType t) {
    if (is_k_quant(t)) return {256, 768};
    if (t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16)
        return {1, 33, 64, 201, 4096};
    return {64, 352};
}

// AMX tiles run 16 tokens at a time: token counts of whole tiles, tiles plus a rest (which
// runs on AVX-512), row counts that leave a group part empty, more groups than one tile row
// holds (4) and than one thread unpacks at once (8).
TEST(PackedGemm, AmxTilesMatchReference) {
    if (detected_isa() < Isa::Amx)
        GTEST_SKIP() << "no amx level on this machine: " << amx_unavailable_reason();
    std::mt19937 rng(41);
    ThreadPool pool(2);
    for (TensorType type :
         {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0, TensorType::Q4_0,
          TensorType::Q4_1, TensorType::IQ4_NL, TensorType::Q2_K, TensorType::Q3_K,
          TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
        const PackedKernels& k = *packed_kernels(type, Isa::Amx);
        for (int64_t rows : {16, 40, 290})
            for (int64_t cols : amx_column_counts(type)) {
                const TestMatrix m(type, rows, cols, k, rng);
                for (int64_t T : {16, 32, 45, 100}) {
                    const std::vector<float> x = random_floats(T * cols, rng);
                    std::vector<float> y(T * rows);
                    std::vector<uint8_t> scratch(matmul_scratch_bytes(type, cols, T));
                    matmul(m.w, x.data(), T, y.data(), scratch.data(), pool);
                    expect_matches_reference(m, x, T, y, describe(k, type, rows, cols, T));
                    if (HasFatalFailure()) return;
                }
            }
    }
}

// The K-quants' AMX tiles sum each super-block's integers exactly and scale them in the AVX-512
// kernels' order (packed_gemm_amx_k.cpp), so both levels give the same floats, bit for bit: on
// random blocks and on extreme ones (every level and scale at its limit, Q6_K's scales -128),
// over tile counts that take every path (one or two token tiles, 64-token passes, a rest).
TEST(PackedGemm, AmxKQuantTilesEqualAvx512) {
    if (detected_isa() < Isa::Amx)
        GTEST_SKIP() << "no amx level on this machine: " << amx_unavailable_reason();
    std::mt19937 rng(43);
    ThreadPool pool(2);
    for (TensorType type : {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K})
        for (bool extreme : {false, true})
            for (int64_t rows : {16, 40})
                for (int64_t cols : {256, 1536}) {
                    const PackedKernels& amx = *packed_kernels(type, Isa::Amx);
                    const PackedKernels& avx512 = *packed_kernels(type, Isa::Avx512);
                    std::vector<uint8_t> bytes = extreme_blocks(type, rows, cols, rng);
                    if (!extreme) {
                        const TestMatrix random(type, rows, cols, avx512, rng);
                        bytes = random.data;
                    }
                    const TestMatrix a(type, rows, cols, amx, bytes),
                        b(type, rows, cols, avx512, bytes);
                    for (int64_t T : {16, 48, 100, 131}) {
                        const std::vector<float> x = random_floats(T * cols, rng);
                        std::vector<float> ya(T * rows), yb(T * rows);
                        std::vector<uint8_t> scratch(matmul_scratch_bytes(type, cols, T));
                        matmul(a.w, x.data(), T, ya.data(), scratch.data(), pool);
                        matmul(b.w, x.data(), T, yb.data(), scratch.data(), pool);
                        for (size_t i = 0; i < ya.size(); ++i)
                            ASSERT_EQ(ya[i], yb[i]) << describe(amx, type, rows, cols, T)
                                                    << (extreme ? " extreme" : " random")
                                                    << " token " << i / rows << " row " << i % rows;
                    }
                }
}

}  // namespace
}  // namespace kite
