// Span attention on the paged-attention kernels: the batch's keys and values are a "cache" of
// F32 rows whose block table is the identity. Where the level has tile kernels
// (tiled_attention.h) they attend the whole batch, each token over its own input. Elsewhere a tile
// of up to kMaxGroup consecutive query tokens of one input and one head goes to the kernel as if
// they were query heads sharing a KV head. The kernel then loads each key and value row once per
// tile rather than once per token, and its online softmax never holds more than one block of
// scores: flash attention's tiling, with the tile's queries in registers and one block of keys in
// L1.
#include "kernels/attention/span_attention.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "kernels/attention/attention_kernels.h"
#include "kernels/attention/tiled_attention.h"

namespace kite {

namespace {

// Positions per "block" of the in-memory rows: the kernels' largest, so a block's scores are
// one pass of the online softmax.
constexpr int64_t kBlock = kMaxKernelBlock;

// One job: query tokens [first, first + n) of one input, one head.
struct Tile {
    int64_t first, n, head, begin, end;  // [begin, end): the input's keys
};

// Tiles input by input, head by head within an input: consecutive jobs read the same head's
// keys and values, which stay in cache from one tile to the next.
std::vector<Tile> make_tiles(Spans spans, int64_t n_heads) {
    std::vector<Tile> tiles;
    for (int64_t i = 0; i < spans.count; ++i) {
        const int64_t begin = spans.starts[i], end = spans.starts[i + 1];
        for (int64_t h = 0; h < n_heads; ++h)
            for (int64_t t = begin; t < end; t += kMaxGroup)
                tiles.push_back({t, std::min<int64_t>(kMaxGroup, end - t), h, begin, end});
    }
    return tiles;
}

}  // namespace

void span_attention(const AttentionShape& shape, const float* q, const float* k, const float* v,
                    float* out, Spans spans, float scale, ThreadPool& pool) {
    if (shape.window != 0) fail("span attention takes no sliding window");
    if (shape.head_dim > kMaxHeadDim) fail("head dimension {} is too large", shape.head_dim);
    const int64_t d = shape.head_dim, width = shape.n_heads * d;
    const int64_t n_tokens = spans.count ? spans.starts[spans.count] : 0;
    const auto row_bytes = int64_t(sizeof(float)) * shape.n_kv_heads * d;
    const int64_t head_bytes = int64_t(sizeof(float)) * d;
    const PagedKvLayer kv{
        {reinterpret_cast<const uint8_t*>(k), TensorType::F32, row_bytes, head_bytes},
        {reinterpret_cast<const uint8_t*>(v), TensorType::F32, row_bytes, head_bytes},
        kBlock};
    std::vector<int32_t> identity(size_t((n_tokens + kBlock - 1) / kBlock));
    std::iota(identity.begin(), identity.end(), 0);
    if (const TileKernels tile = choose_tile_kernels(d); tile.block != nullptr) {
        // Every token reads its whole input; a tile may hold tokens of two inputs.
        std::vector<int64_t> first(static_cast<size_t>(n_tokens)), last(first.size());
        for (int64_t i = 0; i < spans.count; ++i)
            for (int64_t t = spans.starts[i]; t < spans.starts[i + 1]; ++t) {
                first[static_cast<size_t>(t)] = spans.starts[i];
                last[static_cast<size_t>(t)] = spans.starts[i + 1] - 1;
            }
        tiled_attention(tile, kv, shape, q, out, n_tokens, first.data(), last.data(),
                        identity.data(), scale, pool);
        return;
    }
    const std::vector<Tile> tiles = make_tiles(spans, shape.n_heads);
    const AttendHeadsFn attend = choose_attend_heads(d, kBlock);
    const int64_t group = shape.n_heads / shape.n_kv_heads;
    pool.parallel_for(int64_t(tiles.size()), [&](int64_t first, int64_t last, int) {
        // The tile's query rows gathered head_dim apart, as the kernel reads a group's heads.
        float rows[kMaxGroup * kMaxHeadDim], result[kMaxGroup * kMaxHeadDim];
        for (int64_t job = first; job < last; ++job) {
            const Tile& tile = tiles[size_t(job)];
            for (int64_t r = 0; r < tile.n; ++r) {
                const float* src = q + (tile.first + r) * width + tile.head * d;
                std::copy(src, src + d, rows + r * d);
            }
            attend(kv, d, tile.head / group, int(tile.n), rows, nullptr, result, tile.begin,
                   tile.end - 1, identity.data(), scale, nullptr);
            for (int64_t r = 0; r < tile.n; ++r)
                std::copy(result + r * d, result + (r + 1) * d,
                          out + (tile.first + r) * width + tile.head * d);
        }
    });
}

}  // namespace kite
