// Paged attention on every instruction-set level against a direct softmax in double, for every
// KV element type (keys and values of different types too), and quantized KV caches against
// an f16 one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "isa_cap.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_kernels.h"
#include "quant/convert.h"
#include "quant/hadamard.h"

namespace kite {
namespace {

// Shapes: query heads per KV head 1, 2, 3, 4 and 12 (attended 6 at a time). Heads sharing a
// KV head are attended together when tokens x KV heads make at least 4 jobs per thread: 6
// tokens x 1 KV head on two threads are too few, and go one head at a time. Head dimensions:
// 64 and 128 as in most models, 256 (Gemma 3), 96 and 40, which are not multiples of the
// AVX2 kernel's 32-float value slices (40 is no multiple of 16 either, so AVX-512 machines
// run it with the AVX2 kernel, and no multiple of 32, so it has no block-format case). Blocks
// of 4 positions fill part of one 8-position score chunk, 16 to 64 several whole ones; 80 is
// past the SIMD kernels and takes the scalar path.
struct AttentionCase {
    int64_t heads, kv_heads;
    int threads;
    int64_t head_dim = 64, block_size = 4;
};

// Key and value types: each type for both, and mixes; keys and values stored rotated (as the
// block types' are) or not.
struct TypePair {
    TensorType k, v;
    bool rotated = false;
};
constexpr TypePair kTypePairs[] = {
    {TensorType::F32, TensorType::F32},         {TensorType::F16, TensorType::F16},
    {TensorType::Q8_0, TensorType::Q8_0},       {TensorType::Q4_0, TensorType::Q4_0},
    {TensorType::Q4_0, TensorType::Q4_0, true}, {TensorType::Q8_0, TensorType::Q4_0},
    {TensorType::F16, TensorType::Q8_0},        {TensorType::F32, TensorType::F16, true},
    {TensorType::Q8_0, TensorType::F16, true},
};

// The queries as attention reads them against keys of the pair's type: where it scores them
// in integers, as QueryBlocks hold them (of the rotated queries where the keys are rotated).
std::vector<float> queries_as_read(std::vector<float> q, TypePair types, int64_t head_dim) {
    if (!scores_in_integers(types.k)) return q;
    const auto n = static_cast<int64_t>(q.size());
    if (types.rotated) hadamard32_blocks(q.data(), n);
    std::vector<QueryBlock> blocks(q.size() / kQK);
    quantize_query(q.data(), blocks.data(), n, head_dim);
    dequantize_query(blocks.data(), q.data(), n);
    if (types.rotated) hadamard32_blocks(q.data(), n);
    return q;
}

// One layer's keys or values in `type`, rows of head_dim values per KV head per slot (rotated
// before they are stored if `rotated`), and what the cache holds, read back as floats and
// rotated back, per position.
struct CachedRows {
    TensorType type;
    bool rotated;
    int64_t head_bytes, slot_bytes;
    std::vector<uint8_t> memory;
    std::vector<float> held;  // [position][kv_heads * head_dim]

    CachedRows(TensorType t, bool rotate, const std::vector<float>& values, const int32_t* table,
               int64_t block_size, int64_t n_slots, int64_t kv_heads, int64_t head_dim)
        : type(t),
          rotated(rotate),
          head_bytes(static_cast<int64_t>(row_bytes(t, head_dim))),
          slot_bytes(kv_heads * head_bytes),
          memory(n_slots * slot_bytes),
          held(values.size()) {
        const int64_t width = kv_heads * head_dim;
        std::vector<float> row(width);
        for (int64_t p = 0; p < static_cast<int64_t>(values.size()) / width; ++p) {
            const int64_t slot = table[p / block_size] * block_size + p % block_size;
            std::copy(&values[p * width], &values[p * width] + width, row.begin());
            if (rotate) hadamard32_blocks(row.data(), width);
            quantize_row(t, row.data(), &memory[slot * slot_bytes], width);
            dequantize_row(t, &memory[slot * slot_bytes], &held[p * width], width);
            if (rotate) hadamard32_blocks(&held[p * width], width);  // its own inverse
        }
    }
    PagedKvRows rows() const { return {memory.data(), type, slot_bytes, head_bytes, rotated}; }
};

// softmax(q . K * scale) V in double for each query token and head, over what the cache holds
// from firsts[t] (0 when null) to positions[t].
std::vector<double> direct_attention(const std::vector<float>& q, const std::vector<float>& keys,
                                     const std::vector<float>& vals, const int64_t* positions,
                                     int64_t T, int64_t H, int64_t Hkv, int64_t d, double scale,
                                     const int64_t* firsts = nullptr) {
    std::vector<double> expected(T * H * d);
    const int64_t width = Hkv * d;
    for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < H; ++h) {
            const int64_t kvh = h / (H / Hkv);
            const int64_t first = firsts ? firsts[t] : 0;
            std::vector<double> w(positions[t] + 1);
            double mx = -1e30, sum = 0;
            for (int64_t p = first; p <= positions[t]; ++p) {
                double s = 0;
                for (int64_t i = 0; i < d; ++i)
                    s += double(q[(t * H + h) * d + i]) * keys[p * width + kvh * d + i];
                w[p] = s * scale;
                mx = std::max(mx, w[p]);
            }
            for (int64_t p = first; p <= positions[t]; ++p) sum += (w[p] = std::exp(w[p] - mx));
            for (int64_t i = 0; i < d; ++i) {
                double o = 0;
                for (int64_t p = first; p <= positions[t]; ++p)
                    o += w[p] / sum * vals[p * width + kvh * d + i];
                expected[(t * H + h) * d + i] = o;
            }
        }
    return expected;
}

bool fills_blocks(TensorType t, int64_t head_dim) {
    return head_dim % (t == TensorType::F32 || t == TensorType::F16 ? 1 : 32) == 0;
}

class AttentionTest : public ::testing::TestWithParam<AttentionCase> {};

// Attention through a shuffled block table equals plain softmax attention over what the cache
// holds, on every level; the SIMD kernels also equal the scalar reference.
TEST_P(AttentionTest, PagedMatchesDirectSoftmax) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t H = GetParam().heads, Hkv = GetParam().kv_heads, d = GetParam().head_dim,
                  bs = GetParam().block_size, ctx = 2 * bs + 3;
    const int32_t table[] = {5, 1, 3};  // positions 0..bs-1 in block 5, then 1, then 3
    // Ends inside the first block, just past it, at odd places in later blocks, at the end.
    const int64_t T = 6;
    const int64_t positions[T] = {0, bs + 2, ctx - 1, 3, 2 * bs + 1, std::min(bs + 12, ctx - 1)};
    const int32_t* tables[T] = {table, table, table, table, table, table};
    const int64_t n_slots = 6 * bs;
    for (TypePair types : kTypePairs) {
        if (!fills_blocks(types.k, d) || !fills_blocks(types.v, d)) continue;
        if (types.rotated && d % 32 != 0) continue;
        std::vector<float> keys(ctx * Hkv * d), vals(keys.size());
        for (float& x : keys) x = normal(rng);
        for (float& x : vals) x = normal(rng);
        const CachedRows k(types.k, types.rotated, keys, table, bs, n_slots, Hkv, d);
        const CachedRows v(types.v, types.rotated, vals, table, bs, n_slots, Hkv, d);
        // Queries twice the keys' scale: sharper weights, so the running maximum matters.
        std::vector<float> q(T * H * d);
        for (float& x : q) x = 2.0f * normal(rng);
        const std::vector<double> expected = direct_attention(
            queries_as_read(q, types, d), k.held, v.held, positions, T, H, Hkv, d, 0.125);
        const PagedKvLayer layer{k.rows(), v.rows(), bs};
        ThreadPool pool(GetParam().threads);
        std::vector<float> scalar;
        for (Isa isa : test::supported_isas()) {
            test::ScopedIsaCap cap(isa);
            std::vector<float> out(T * H * d, NAN);
            paged_attention(layer, {H, Hkv, d}, q.data(), out.data(), T, positions, nullptr, tables,
                            0.125f, pool);
            if (isa == Isa::Scalar) scalar = out;
            for (int64_t i = 0; i < T * H * d; ++i) {
                ASSERT_NEAR(out[i], expected[i], 1e-4)
                    << isa_name(isa) << " " << tensor_type_name(types.k) << "/"
                    << tensor_type_name(types.v) << (types.rotated ? " rotated" : "") << " token "
                    << i / (H * d) << " head " << i / d % H << " element " << i % d;
                ASSERT_NEAR(out[i], scalar[i], 1e-4) << isa_name(isa) << " vs scalar";
            }
        }
    }
}

// Each token may start at its own first position (a KV window's sinks start there): equal to
// the softmax over first..position alone, on every level, for every type pair.
TEST(PagedAttentionFirsts, EachTokenStartsAtItsFirstPosition) {
    std::mt19937 rng(9);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t H = 4, Hkv = 2, d = 64, bs = 16, ctx = 3 * bs;
    const int32_t table[] = {2, 0, 1};
    const int64_t T = 5;
    const int64_t positions[T] = {ctx - 1, bs + 3, ctx - 1, 2 * bs, 12};
    const int64_t firsts[T] = {bs - 4, bs - 4, 0, 2 * bs, 12};  // mid-block, none, itself
    const int32_t* tables[T] = {table, table, table, table, table};
    ThreadPool pool(2);
    for (TypePair types : kTypePairs) {
        std::vector<float> keys(ctx * Hkv * d), vals(keys.size()), q(T * H * d);
        for (float& x : keys) x = normal(rng);
        for (float& x : vals) x = normal(rng);
        for (float& x : q) x = 2.0f * normal(rng);
        const CachedRows k(types.k, types.rotated, keys, table, bs, ctx, Hkv, d);
        const CachedRows v(types.v, types.rotated, vals, table, bs, ctx, Hkv, d);
        const std::vector<double> expected = direct_attention(
            queries_as_read(q, types, d), k.held, v.held, positions, T, H, Hkv, d, 0.125, firsts);
        for (Isa isa : test::supported_isas()) {
            test::ScopedIsaCap cap(isa);
            std::vector<float> out(T * H * d, NAN);
            paged_attention({k.rows(), v.rows(), bs}, {H, Hkv, d}, q.data(), out.data(), T,
                            positions, firsts, tables, 0.125f, pool);
            for (int64_t i = 0; i < T * H * d; ++i)
                ASSERT_NEAR(out[i], expected[i], 1e-4)
                    << isa_name(isa) << " " << tensor_type_name(types.k) << " token "
                    << i / (H * d);
        }
    }
}

// Keys with a first key (kv/key_calibration.h): position 0's key is what is stored plus the
// first key (rotated back where the keys are rotated), for the tokens whose range holds
// position 0 and no other; on every level, for every type pair, in blocks of 16 and 64.
TEST(PagedAttentionFirstKey, IsAddedToPositionZeroAlone) {
    std::mt19937 rng(10);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t H = 4, Hkv = 2, d = 64, width = Hkv * d;
    ThreadPool pool(2);
    for (int64_t bs : {16, 64}) {
        const int64_t ctx = 3 * bs;
        const int32_t table[] = {2, 0, 1};
        const int64_t T = 5;
        const int64_t positions[T] = {0, 5, ctx - 1, bs + 3, ctx - 1};
        const int64_t firsts[T] = {0, 0, 0, 1, bs};
        const int32_t* tables[T] = {table, table, table, table, table};
        for (TypePair types : kTypePairs) {
            std::vector<float> keys(ctx * width), vals(keys.size()), q(T * H * d), first(width);
            for (float& x : keys) x = normal(rng);
            for (float& x : vals) x = normal(rng);
            for (float& x : q) x = 2.0f * normal(rng);
            for (float& x : first) x = 3.0f * normal(rng);
            const CachedRows k(types.k, types.rotated, keys, table, bs, ctx, Hkv, d);
            const CachedRows v(types.v, types.rotated, vals, table, bs, ctx, Hkv, d);
            std::vector<float> held = k.held, added = first;
            if (types.rotated) hadamard32_blocks(added.data(), width);
            for (int64_t i = 0; i < width; ++i) held[i] += added[i];
            const std::vector<double> expected = direct_attention(
                queries_as_read(q, types, d), held, v.held, positions, T, H, Hkv, d, 0.125, firsts);
            PagedKvRows key_rows = k.rows();
            key_rows.first_key = first.data();
            for (Isa isa : test::supported_isas()) {
                test::ScopedIsaCap cap(isa);
                std::vector<float> out(T * H * d, NAN);
                paged_attention({key_rows, v.rows(), bs}, {H, Hkv, d}, q.data(), out.data(), T,
                                positions, firsts, tables, 0.125f, pool);
                for (int64_t i = 0; i < T * H * d; ++i)
                    ASSERT_NEAR(out[i], expected[i], 1e-4)
                        << isa_name(isa) << " " << tensor_type_name(types.k) << "/"
                        << tensor_type_name(types.v) << (types.rotated ? " rotated" : "")
                        << " block " << bs << " token " << i / (H * d);
            }
        }
    }
}

// Ranges longer than one 256-position chunk are attended a chunk per job and the chunks'
// softmaxes merged: equal to the direct softmax on every level and type pair, with sliding
// windows and first positions that start mid-chunk, and ranges within one chunk beside long
// ones; and a token's result is the same, bit for bit, alone or in a batch.
TEST(PagedAttentionChunks, SplitDecodeMatchesDirectSoftmax) {
    std::mt19937 rng(13);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t H = 6, Hkv = 2, d = 64, bs = 16, ctx = 40 * bs;
    std::vector<int32_t> table(ctx / bs);
    for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>((i * 7) % 40);
    const int64_t T = 2;
    const int32_t* tables[T] = {table.data(), table.data()};
    struct Case {
        int64_t positions[T], firsts[T], window;
    };
    const Case cases[] = {{{ctx - 1, 300}, {0, 0}, 0},
                          {{ctx - 1, ctx - 2}, {5, 0}, 0},
                          {{ctx - 1, 40}, {0, 0}, 0},  // 41 positions: too few to split alone
                          {{ctx - 1, 0}, {0, 0}, 0},   // 1 position: empty chunks
                          {{ctx - 1, ctx / 2}, {0, 0}, 200}};
    for (int threads : {1, 2, 4}) {  // no split, 2 chunks, 4 chunks
        ThreadPool pool(threads);
        for (TypePair types : kTypePairs) {
            std::vector<float> keys(ctx * Hkv * d), vals(keys.size()), q(T * H * d);
            for (float& x : keys) x = normal(rng);
            for (float& x : vals) x = normal(rng);
            for (float& x : q) x = 2.0f * normal(rng);
            const CachedRows k(types.k, types.rotated, keys, table.data(), bs, ctx, Hkv, d);
            const CachedRows v(types.v, types.rotated, vals, table.data(), bs, ctx, Hkv, d);
            for (const Case& c : cases) {
                int64_t firsts[T];
                for (int64_t t = 0; t < T; ++t)
                    firsts[t] = std::max(c.firsts[t],
                                         c.window ? c.positions[t] - c.window + 1 : int64_t{0});
                const std::vector<double> expected =
                    direct_attention(queries_as_read(q, types, d), k.held, v.held, c.positions, T,
                                     H, Hkv, d, 0.125, firsts);
                for (Isa isa : test::supported_isas()) {
                    test::ScopedIsaCap cap(isa);
                    std::vector<float> out(T * H * d, NAN);
                    paged_attention({k.rows(), v.rows(), bs}, {H, Hkv, d, c.window}, q.data(),
                                    out.data(), T, c.positions, c.firsts, tables, 0.125f, pool);
                    for (int64_t i = 0; i < T * H * d; ++i)
                        ASSERT_NEAR(out[i], expected[i], 1e-4)
                            << isa_name(isa) << " " << threads << " threads "
                            << tensor_type_name(types.k) << "/" << tensor_type_name(types.v)
                            << " token " << i / (H * d) << " window " << c.window;
                    std::vector<float> alone(H * d, NAN);
                    paged_attention({k.rows(), v.rows(), bs}, {H, Hkv, d, c.window}, q.data(),
                                    alone.data(), 1, c.positions, c.firsts, tables, 0.125f, pool);
                    for (int64_t i = 0; i < H * d; ++i) ASSERT_EQ(alone[i], out[i]) << i;
                }
            }
        }
    }
}

// A run of 64 or more tokens of one sequence at consecutive positions (a prefill chunk) goes to
// the tile kernels where the level has them: equal to the direct softmax and to the scalar
// reference (token by token) on every level and type pair, causal from position 0 and from
// mid-sequence, with grouped-query attention as Qwen2.5 has it (7 heads a KV head), head_dim
// 256 with a sliding window as Gemma 3 has them, first positions, a first key; a token of
// another sequence (another block table) in the same batch is attended token by token.
TEST(PagedAttentionPrefill, TiledMatchesDirectSoftmax) {
    struct Shape {
        int64_t heads, kv_heads, head_dim, window, start, tokens, first;
    };
    const Shape shapes[] = {{14, 2, 64, 0, 0, 130, 0},
                            {14, 2, 64, 0, 70, 90, 0},
                            {4, 1, 256, 100, 40, 150, 0},
                            {6, 2, 64, 0, 20, 70, 5}};
    std::mt19937 rng(17);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    ThreadPool pool(2);
    for (const Shape& sh : shapes) {
        const int64_t H = sh.heads, Hkv = sh.kv_heads, d = sh.head_dim, bs = 16;
        const int64_t ctx = sh.start + sh.tokens, n_blocks = (ctx + bs - 1) / bs;
        std::vector<int32_t> table(n_blocks), other(n_blocks);
        for (int64_t b = 0; b < n_blocks; ++b) table[b] = static_cast<int32_t>(n_blocks - 1 - b);
        other = table;  // the same keys through another table: another sequence
        const int64_t T = sh.tokens + 1;
        std::vector<int64_t> positions(T), firsts(T, sh.first), bounds(T);
        std::vector<const int32_t*> tables(T, table.data());
        for (int64_t t = 0; t < sh.tokens; ++t) positions[t] = sh.start + t;
        positions[T - 1] = ctx - 3, tables[T - 1] = other.data();
        for (int64_t t = 0; t < T; ++t)
            bounds[t] = std::max(sh.first, sh.window ? positions[t] - sh.window + 1 : int64_t{0});
        for (TypePair types : kTypePairs) {
            std::vector<float> keys(ctx * Hkv * d), vals(keys.size()), q(T * H * d);
            for (float& x : keys) x = normal(rng);
            for (float& x : vals) x = normal(rng);
            for (float& x : q) x = 2.0f * normal(rng);
            const CachedRows k(types.k, types.rotated, keys, table.data(), bs, n_blocks * bs, Hkv,
                               d);
            const CachedRows v(types.v, types.rotated, vals, table.data(), bs, n_blocks * bs, Hkv,
                               d);
            // A first key (kv/key_calibration.h), added to position 0's key where it is read.
            std::vector<float> first_key(Hkv * d), held = k.held;
            for (float& x : first_key) x = 3.0f * normal(rng);
            std::vector<float> added = first_key;
            if (types.rotated) hadamard32_blocks(added.data(), Hkv * d);
            for (int64_t i = 0; i < Hkv * d; ++i) held[i] += added[i];
            PagedKvRows key_rows = k.rows();
            key_rows.first_key = first_key.data();
            const std::vector<double> expected =
                direct_attention(queries_as_read(q, types, d), held, v.held, positions.data(), T, H,
                                 Hkv, d, 0.125, bounds.data());
            std::vector<float> scalar;
            for (Isa isa : test::supported_isas()) {
                test::ScopedIsaCap cap(isa);
                std::vector<float> out(T * H * d, NAN);
                paged_attention({key_rows, v.rows(), bs}, {H, Hkv, d, sh.window}, q.data(),
                                out.data(), T, positions.data(), firsts.data(), tables.data(),
                                0.125f, pool);
                if (isa == Isa::Scalar) scalar = out;
                // The amx level's tiles multiply 16-bit factors (two bf16 parts each): here, with
                // scores of up to 50 in |q||k|, it measured 2e-5 to 1.8e-4 from the direct
                // softmax (the f32 levels: 1e-6 to 1.4e-5).
                const double tolerance = isa == Isa::Amx ? 3e-4 : 1e-4;
                for (int64_t i = 0; i < T * H * d; ++i) {
                    ASSERT_NEAR(out[i], expected[i], tolerance)
                        << isa_name(isa) << " " << tensor_type_name(types.k) << "/"
                        << tensor_type_name(types.v) << (types.rotated ? " rotated" : "")
                        << " head_dim " << d << " token " << i / (H * d);
                    ASSERT_NEAR(out[i], scalar[i], tolerance) << isa_name(isa) << " vs scalar";
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionTest,
    ::testing::Values(AttentionCase{4, 2, 1}, AttentionCase{4, 2, 2}, AttentionCase{12, 1, 1},
                      AttentionCase{12, 1, 2}, AttentionCase{12, 1, 2, 128, 32},
                      AttentionCase{4, 2, 1, 32, 32}, AttentionCase{8, 2, 1, 128, 4},
                      AttentionCase{9, 3, 1, 64, 16}, AttentionCase{4, 4, 1, 96, 64},
                      AttentionCase{3, 1, 1, 256, 16}, AttentionCase{16, 4, 1, 256, 32},
                      AttentionCase{6, 2, 1, 40, 16}, AttentionCase{12, 3, 2, 128, 64},
                      AttentionCase{4, 1, 1, 64, 80}));

// A quantized KV cache against an f16 one, on the same keys and values: the output's error,
// relative to the f16 output's RMS, stays within what 8 and 4 bits allow. Keys and values
// like a model's (unit scale, a few larger outlier channels), 300 positions, head dims the
// models use and GQA groups 1 to 8. Measured: q8_0 0.9-1.7%, q4_0 17-29% (its step is 16
// times q8_0's, amax/8 against amax/127).
TEST(QuantizedKvAttention, StaysCloseToF16) {
    struct Bound {
        TensorType type;
        bool rotated;
        double max_rel_rms;
    };
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t d : {64, 128, 256})
        for (int64_t group : {1, 2, 4, 8}) {
            const int64_t Hkv = 2, H = Hkv * group, bs = 16, ctx = 300, T = 3;
            const int64_t n_blocks = (ctx + bs - 1) / bs;
            std::vector<int32_t> table(n_blocks);
            for (int64_t b = 0; b < n_blocks; ++b)
                table[b] = static_cast<int32_t>(n_blocks - 1 - b);
            const int64_t positions[T] = {ctx - 1, ctx / 2, 17};
            const int32_t* tables[T] = {table.data(), table.data(), table.data()};
            std::vector<float> keys(ctx * Hkv * d), vals(keys.size()), q(T * H * d);
            for (size_t i = 0; i < keys.size(); ++i) {
                keys[i] = normal(rng) * (i % 29 == 0 ? 4.0f : 1.0f);
                vals[i] = normal(rng);
            }
            for (float& x : q) x = 1.5f * normal(rng);
            const float scale = 1.0f / std::sqrt(static_cast<float>(d));
            ThreadPool pool(2);
            auto attend = [&](TensorType type, bool rotate) {
                const CachedRows k(type, rotate, keys, table.data(), bs, n_blocks * bs, Hkv, d);
                const CachedRows v(type, rotate, vals, table.data(), bs, n_blocks * bs, Hkv, d);
                std::vector<float> out(T * H * d);
                paged_attention({k.rows(), v.rows(), bs}, {H, Hkv, d}, q.data(), out.data(), T,
                                positions, nullptr, tables, scale, pool);
                return out;
            };
            const std::vector<float> f16 = attend(TensorType::F16, false);
            double rms = 0;
            for (float x : f16) rms += double(x) * x;
            rms = std::sqrt(rms / static_cast<double>(f16.size()));
            for (Bound b :
                 {Bound{TensorType::Q8_0, false, 0.03}, Bound{TensorType::Q4_0, false, 0.4},
                  Bound{TensorType::Q4_0, true, 0.4}}) {
                const std::vector<float> out = attend(b.type, b.rotated);
                double err = 0;
                for (size_t i = 0; i < out.size(); ++i) err += std::pow(double(out[i]) - f16[i], 2);
                err = std::sqrt(err / static_cast<double>(out.size()));
                EXPECT_LT(err / rms, b.max_rel_rms)
                    << tensor_type_name(b.type) << " head_dim " << d << " group " << group;
            }
        }
}

}  // namespace
}  // namespace kite
