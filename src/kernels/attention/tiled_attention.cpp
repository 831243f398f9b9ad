#include "kernels/attention/tiled_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/isa.h"
#include "quant/convert.h"

namespace kite {

namespace {

// Rows per tile at most: enough that converting a block's keys and values costs little beside
// the rows' products with them (128 rows: a tenth of the time, 256: half that), few enough
// that a tile's queries and sums (128 KiB at head_dim 64) stay in L2 beside the block.
constexpr int64_t kMaxTileRows = 256;

// Converts positions [begin, end) of KV head kv_head, which lie in the block from `start`, to
// the block's floats; the block's other positions are zeros. The keys are converted as rows
// into `rows` and then transposed 16 x 16 at a time: written straight into the transposed
// block, each key's values went to head_dim lines 256 bytes apart (at head_dim 256 more than
// L1 holds), which took most of a Gemma 3 tile's time outside its products.
void load_block(KvRowFn convert, const PagedKvLayer& kv, int64_t kv_head, int64_t d,
                const int32_t* block_table, int64_t start, int64_t begin, int64_t end, float* kt,
                float* v, float* rows) {
    const int64_t j0 = begin - start, j1 = end - start;
    if (j0 > 0 || j1 < kTileKeys) {
        std::fill(kt, kt + d * kTileKeys, 0.0f);
        std::fill(v, v + d * kTileKeys, 0.0f);
    }
    for (int64_t p = begin; p < end; ++p) {
        const int64_t j = p - start;
        const int64_t slot =
            int64_t{block_table[p / kv.block_size]} * kv.block_size + p % kv.block_size;
        float* key = rows + j * d;
        convert(kv.k.type, kv.k.row(slot, kv_head), key, static_cast<size_t>(d));
        if (p == 0 && kv.k.first_key != nullptr)
            for (int64_t i = 0; i < d; ++i) key[i] += kv.k.first_key[kv_head * d + i];
        convert(kv.v.type, kv.v.row(slot, kv_head), v + j * d, static_cast<size_t>(d));
    }
    constexpr int64_t kSquare = 16;
    for (int64_t i0 = 0; i0 < d; i0 += kSquare)
        for (int64_t jb = j0; jb < j1; jb += kSquare)
            for (int64_t i = i0; i < std::min(d, i0 + kSquare); ++i)
                for (int64_t j = jb; j < std::min(j1, jb + kSquare); ++j)
                    kt[i * kTileKeys + j] = rows[j * d + i];
}

// One tile's memory, per thread, grown to the largest tile.
struct TileBuffers {
    std::vector<float> q, o, m, l, kt, v, key_rows;
    std::vector<int64_t> first, last;

    void resize(int64_t rows, int64_t d) {
        for (std::vector<float>* x : {&q, &o}) x->resize(static_cast<size_t>(rows * d));
        for (std::vector<float>* x : {&m, &l}) x->resize(static_cast<size_t>(rows));
        for (std::vector<float>* x : {&kt, &v, &key_rows})
            x->resize(static_cast<size_t>(kTileKeys * d));
        first.resize(static_cast<size_t>(rows));
        last.resize(static_cast<size_t>(rows));
    }
};

// Tokens [t_begin, t_end) and the query heads of KV head kv_head: row r is token
// t_begin + r / group, head kv_head * group + r % group.
void attend_tile(const TileKernels& kernels, const PagedKvLayer& kv, const AttentionShape& shape,
                 const float* q, float* out, int64_t t_begin, int64_t t_end, int64_t kv_head,
                 const int64_t* first, const int64_t* last, const int32_t* block_table,
                 float scale) {
    const int64_t d = shape.head_dim, group = shape.n_heads / shape.n_kv_heads;
    const int64_t width = shape.n_heads * d, rows = (t_end - t_begin) * group;
    thread_local TileBuffers b;
    b.resize(rows, d);
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = -1;
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = t_begin + r / group, h = kv_head * group + r % group;
        for (int64_t i = 0; i < d; ++i) b.q[r * d + i] = q[t * width + h * d + i] * scale;
        b.first[r] = first[t], b.last[r] = last[t];
        lo = std::min(lo, first[t]), hi = std::max(hi, last[t]);
    }
    std::fill(b.o.begin(), b.o.begin() + rows * d, 0.0f);
    std::fill(b.m.begin(), b.m.begin() + rows, -std::numeric_limits<float>::infinity());
    std::fill(b.l.begin(), b.l.begin() + rows, 0.0f);
    const TileRows tile{b.q.data(),    rows,       d,          b.first.data(),
                        b.last.data(), b.o.data(), b.m.data(), b.l.data()};
    if (kernels.prepare != nullptr) kernels.prepare(tile);
    // Blocks aligned to multiples of kTileKeys: a row's sums do not depend on its tile.
    for (int64_t start = lo - lo % kTileKeys; start <= hi; start += kTileKeys) {
        load_block(kernels.row, kv, kv_head, d, block_table, start, std::max(start, lo),
                   std::min(start + kTileKeys, hi + 1), b.kt.data(), b.v.data(), b.key_rows.data());
        kernels.block(tile, {b.kt.data(), b.v.data(), start});
    }
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = t_begin + r / group, h = kv_head * group + r % group;
        for (int64_t i = 0; i < d; ++i) out[t * width + h * d + i] = b.o[r * d + i] / b.l[r];
    }
}

}  // namespace

void tile_block_scalar(const TileRows& rows, const KeyBlock& block) {
    const int64_t d = rows.head_dim;
    for (int64_t r = 0; r < rows.rows; ++r) {
        const int64_t lo = std::max<int64_t>(rows.first[r] - block.start, 0);
        const int64_t hi = std::min<int64_t>(rows.last[r] - block.start, kTileKeys - 1);
        if (lo > hi) continue;
        const float* q = rows.q + r * d;
        float s[kTileKeys], top = rows.m[r];
        for (int64_t j = lo; j <= hi; ++j) {
            s[j] = 0.0f;
            for (int64_t i = 0; i < d; ++i) s[j] += q[i] * block.kt[i * kTileKeys + j];
            top = std::max(top, s[j]);
        }
        const float correction = std::exp(rows.m[r] - top);
        float sum = 0.0f;
        for (int64_t j = lo; j <= hi; ++j) sum += (s[j] = std::exp(s[j] - top));
        rows.l[r] = rows.l[r] * correction + sum;
        rows.m[r] = top;
        float* o = rows.o + r * d;
        for (int64_t i = 0; i < d; ++i) {
            o[i] *= correction;
            for (int64_t j = lo; j <= hi; ++j) o[i] += s[j] * block.v[j * d + i];
        }
    }
}

// Read at every call rather than once, so that set_isa_cap takes effect at once.
TileKernels choose_tile_kernels(int64_t head_dim) {
#if defined(__x86_64__)
    const CpuFeatures& cpu = cpu_features();
    if (active_isa() >= Isa::Amx && cpu.amx_bf16 && cpu.avx512_bf16 && head_dim % 64 == 0 &&
        head_dim <= kMaxHeadDim)
        return {tile_block_amx, kv_row_avx512, tile_prepare_amx};
    if (active_isa() >= Isa::Avx512 && head_dim % 16 == 0 && head_dim <= kMaxHeadDim)
        return {tile_block_avx512, kv_row_avx512};
    if (active_isa() >= Isa::Avx2 && head_dim % 8 == 0 && head_dim <= kMaxHeadDim)
        return {tile_block_avx2, kv_row_avx2};
#else
    (void)head_dim;
#endif
    return {};
}

void tiled_attention(const TileKernels& kernels, const PagedKvLayer& kv,
                     const AttentionShape& shape, const float* q, float* out, int64_t n,
                     const int64_t* first, const int64_t* last, const int32_t* block_table,
                     float scale, ThreadPool& pool) {
    const int64_t group = shape.n_heads / shape.n_kv_heads;
    // Tiles small enough to give each thread about four jobs.
    const int64_t per_tile = std::clamp<int64_t>(n * shape.n_kv_heads / (4 * pool.size()), 1,
                                                 std::max<int64_t>(kMaxTileRows / group, 1));
    const int64_t tiles = (n + per_tile - 1) / per_tile;
    pool.parallel_for(tiles * shape.n_kv_heads, [&](int64_t begin, int64_t end, int) {
        for (int64_t job = begin; job < end; ++job) {
            // The last tokens first: they read the most keys, and the jobs claimed last
            // should be the short ones.
            const int64_t tile = tiles - 1 - job / shape.n_kv_heads;
            attend_tile(kernels, kv, shape, q, out, tile * per_tile,
                        std::min(n, (tile + 1) * per_tile), job % shape.n_kv_heads, first, last,
                        block_table, scale);
        }
    });
}

}  // namespace kite
