// The packed kernels of every instruction set this CPU runs (AVX2, AVX-VNNI, AVX-512) against
// the scalar reference matmul, on random data over many shapes: row counts off the group size,
// odd block and column counts, and token counts that run every tile width and the conversion
// of float groups for long prefills.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/isa.h"
#include "kernels/matmul.h"
#include "kernels/packed_gemm.h"
#include "kernels/weight_kernels.h"
#include "quant/blocks.h"
#include "quant/convert.h"
#include "quant/fp16.h"

namespace kite {
namespace {

constexpr TensorType kTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16,
                                 TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1};

bool is_quantized(TensorType t) {
    return t == TensorType::Q8_0 || t == TensorType::Q4_0 || t == TensorType::Q4_1;
}

// The levels with packed kernels that this CPU can run.
std::vector<Isa> packed_isas() {
    std::vector<Isa> out;
    for (Isa isa : {Isa::Avx2, Isa::AvxVnni, Isa::Avx512})
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
        const std::vector<float> src = random_floats(rows * cols, rng);
        const size_t rb = row_bytes(type, cols);
        for (int64_t r = 0; r < rows; ++r) quantize_row(type, &src[r * cols], &data[r * rb], cols);
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

// Each product may differ from the reference only by float rounding: a small fraction of the
// sum of its terms' magnitudes (activation quantization is the same in both).
void expect_matches_reference(const TestMatrix& m, const std::vector<float>& x, int64_t n_tokens,
                              const std::vector<float>& y, const std::string& what) {
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
            ASSERT_NEAR(y[i], ref[i], 1e-5 * magnitude + 1e-6)
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
            std::vector<int64_t> col_counts = {32, 96, 160, 4096};
            if (!is_quantized(type)) col_counts.insert(col_counts.end(), {1, 33, 201});
            for (int64_t rows : {1, 7, 9, 17, 33})
                for (int64_t cols : col_counts) {
                    const TestMatrix m(type, rows, cols, *k, rng);
                    // 70: past the token count from which float groups are converted to F32.
                    const std::vector<int64_t> token_counts =
                        cols >= 4096 ? std::vector<int64_t>{1, 5, 70}
                                     : std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 64, 70};
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

TEST(PackedGemm, SharedInputMatchesReference) {
    // Q, K and V shapes off the group sizes: one prepared input, one job over all their rows.
    std::mt19937 rng(5);
    ThreadPool pool(2);
    const int64_t cols = 160;
    for (Isa isa : packed_isas())
        for (TensorType type : kTypes) {
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

// Blocks whose every weight is one of the type's extremes, against activations that quantize to
// +-127: the integer sums the AVX2 kernels keep in int16 come closest to overflowing.
std::vector<uint8_t> extreme_blocks(TensorType type, int64_t rows, int64_t cols,
                                    std::mt19937& rng) {
    std::vector<uint8_t> bytes(row_bytes(type, cols) * rows);
    std::bernoulli_distribution coin;
    const uint16_t one = f32_to_f16(1.0f);
    const int64_t n_blocks = rows * cols / kQK;
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
        for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1}) {
            const PackedKernels& k = *packed_kernels(type, isa);
            const TestMatrix m(type, rows, cols, k, extreme_blocks(type, rows, cols, rng));
            for (int64_t T : {1, 4}) {
                // Each activation block all +-1 (every quant +-127), or all +1 (biased 255).
                std::vector<float> x(T * cols);
                std::bernoulli_distribution coin;
                for (size_t i = 0; i < x.size(); ++i)
                    x[i] = (i / kQK) % 2 ? 1.0f : (coin(rng) ? 1.0f : -1.0f);
                std::vector<float> y(T * rows);
                std::vector<uint8_t> scratch(matmul_scratch_bytes(type, cols, T));
                matmul(m.w, x.data(), T, y.data(), scratch.data(), pool);
                expect_matches_reference(m, x, T, y, describe(k, type, rows, cols, T));
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

}  // namespace
}  // namespace kite
