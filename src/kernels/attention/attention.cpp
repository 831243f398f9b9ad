#include "kernels/attention/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "kernels/attention/attention_kernels.h"
#include "kernels/attention/tiled_attention.h"
#include "kernels/cpu/isa.h"
#include "quant/convert.h"
#include "quant/hadamard.h"

namespace kite {

namespace {

// The scalar reference reads every type through the row conversions of quant/convert.h.
void load_row(const PagedKvRows& rows, int64_t slot, int64_t kv_head, int64_t n, float* dst) {
    dequantize_row(rows.type, rows.row(slot, kv_head), dst, static_cast<size_t>(n));
}

// One query head over positions first..last. Online softmax: keep the running maximum m, the
// running sum of exp(score - m) and the weighted sum of values, rescaling both when m grows.
// Reports (max, sum) in stats[0..1] when stats is given (AttendHeadsFn).
// Where qb is given the query is read as its QueryBlocks hold it (AttendHeadsFn): every
// product d_q q_i d_k k_i of the kernels' integer scores, summed in another order.
void attend_head(const PagedKvLayer& kv, int64_t head_dim, int64_t kv_head, const float* q,
                 const QueryBlock* qb, float* out, int64_t first, int64_t last,
                 const int32_t* block_table, float scale, float* stats) {
    float acc[kMaxHeadDim] = {}, k[kMaxHeadDim], v[kMaxHeadDim], q_read[kMaxHeadDim];
    if (qb) {
        dequantize_query(qb, q_read, head_dim);
        q = q_read;
    }
    float max_score = -std::numeric_limits<float>::infinity(), sum = 0.0f;
    for (int64_t p = first; p <= last; ++p) {
        const int64_t slot =
            int64_t{block_table[p / kv.block_size]} * kv.block_size + p % kv.block_size;
        load_row(kv.k, slot, kv_head, head_dim, k);
        if (p == 0 && kv.k.first_key != nullptr)
            for (int64_t i = 0; i < head_dim; ++i) k[i] += kv.k.first_key[kv_head * head_dim + i];
        float score = 0.0f;
        for (int64_t i = 0; i < head_dim; ++i) score += q[i] * k[i];
        score *= scale;
        load_row(kv.v, slot, kv_head, head_dim, v);
        if (score > max_score) {
            const float correction = std::exp(max_score - score);
            for (int64_t i = 0; i < head_dim; ++i) acc[i] *= correction;
            sum *= correction;
            max_score = score;
        }
        const float w = std::exp(score - max_score);
        for (int64_t i = 0; i < head_dim; ++i) acc[i] += w * v[i];
        sum += w;
    }
    for (int64_t i = 0; i < head_dim; ++i) out[i] = acc[i] / sum;
    if (stats) stats[0] = max_score, stats[1] = sum;
}

// The scalar reference, for the heads one job attends.
void attend_heads_scalar(const PagedKvLayer& kv, int64_t head_dim, int64_t kv_head, int n_q,
                         const float* q, const QueryBlock* qb, float* out, int64_t first,
                         int64_t last, const int32_t* block_table, float scale, float* stats) {
    for (int h = 0; h < n_q; ++h)
        attend_head(kv, head_dim, kv_head, q + h * head_dim, qb ? qb + h * head_dim / kQK : nullptr,
                    out + h * head_dim, first, last, block_table, scale,
                    stats ? stats + 2 * h : nullptr);
}

// The queries of tokens [t0, t0 + n) as the keys are stored: each head scaled by its KV
// head's query scale and rotated, where the keys are, into `buffer`; q itself otherwise. Once
// per pass, not per job: a decoding token's many chunks all read the same queries.
const float* queries_for(const PagedKvRows& keys, const AttentionShape& shape, const float* q,
                         int64_t t0, int64_t n, std::vector<float>& buffer) {
    const int64_t width = shape.n_heads * shape.head_dim;
    if (!keys.rotated && keys.query_scale == nullptr) return q + t0 * width;
    buffer.assign(q + t0 * width, q + (t0 + n) * width);
    if (keys.query_scale != nullptr) {
        const int64_t group = shape.n_heads / shape.n_kv_heads;
        for (int64_t t = 0; t < n; ++t)
            for (int64_t h = 0; h < shape.n_heads; ++h) {
                const float* scale = keys.query_scale + h / group * shape.head_dim;
                float* row = buffer.data() + t * width + h * shape.head_dim;
                for (int64_t i = 0; i < shape.head_dim; ++i) row[i] *= scale[i];
            }
    }
    if (keys.rotated) hadamard32_blocks(buffer.data(), n * width);
    return buffer.data();
}

// Those queries as QueryBlocks in `buffer` where the keys are scored in integers, else null.
const QueryBlock* query_blocks_for(const PagedKvRows& keys, const float* queries, int64_t n_values,
                                   int64_t head_dim, std::vector<QueryBlock>& buffer) {
    if (!scores_in_integers(keys.type)) return nullptr;
    buffer.resize(std::max<size_t>(buffer.size(), static_cast<size_t>(n_values / kQK)));
    quantize_query(queries, buffer.data(), n_values, head_dim);
    return buffer.data();
}

// The first position token t reads: its first, or the start of its sliding window if later.
int64_t first_position(const AttentionShape& shape, const int64_t* positions, const int64_t* firsts,
                       int64_t t) {
    return std::max(firsts ? firsts[t] : 0,
                    shape.window > 0 ? positions[t] - shape.window + 1 : int64_t{0});
}

// Attention reads a token's positions in chunks of this many, aligned to multiples of it,
// each chunk a job of its own whose softmax is merged with the others'. The chunks depend on
// the token's range alone, never on what else is in the batch, so a token's attention is the
// same in prefill, decode, a batch or a speculative verify step; and a decoding token at a
// long context still gives every thread work.
constexpr int64_t kChunkPositions = 256;

// Tokens whose chunked results one pass holds before merging them (bounds its buffer).
constexpr int64_t kTokensPerPass = 64;

// The query heads one job attends: the most that divide the group (they share each key and
// value row the kernel loads and converts), unless that leaves a thread idle. Grouping changes
// no result, only how often rows are read.
int64_t heads_per_job(const AttentionShape& shape, int64_t n_tokens, int64_t chunks,
                      int64_t threads) {
    if (n_tokens * shape.n_kv_heads * chunks < 4 * threads) return 1;
    const int64_t group = shape.n_heads / shape.n_kv_heads;
    int64_t per_job = std::min<int64_t>(group, kMaxGroup);
    while (group % per_job) --per_job;
    return per_job;
}

// Chunk c (counted from the one holding `first`, c < chunk_count) of positions first..last.
struct Range {
    int64_t first, last;
};
Range chunk_range(int64_t first, int64_t last, int64_t c) {
    const int64_t start = (first / kChunkPositions + c) * kChunkPositions;
    return {std::max(first, start), std::min(last, start + kChunkPositions - 1)};
}

int64_t chunk_count(int64_t first, int64_t last) {
    return last / kChunkPositions - first / kChunkPositions + 1;
}

// One head's out from its chunks' results, weighted by their share of the softmax: chunk c's
// result is at parts + c * stride, its (max, sum) at stats + c * stats_stride, and its weight
// exp(max_c - max) * sum_c, where max is the largest of the chunks' maxima.
void merge_chunks(const float* parts, int64_t stride, const float* stats, int64_t stats_stride,
                  int64_t n_chunks, int64_t head_dim, float* out) {
    float top = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < n_chunks; ++c) top = std::max(top, stats[c * stats_stride]);
    float total = 0.0f;
    std::fill(out, out + head_dim, 0.0f);
    for (int64_t c = 0; c < n_chunks; ++c) {
        const float* st = stats + c * stats_stride;
        const float w = std::exp(st[0] - top) * st[1];
        for (int64_t i = 0; i < head_dim; ++i) out[i] += w * parts[c * stride + i];
        total += w;
    }
    for (int64_t i = 0; i < head_dim; ++i) out[i] /= total;
}

// Tokens [t0, t0 + n) of a paged_attention call: every (token, head group, chunk) a job, then
// each token's chunks merged into out.
void attend_tokens(AttendHeadsFn attend, const PagedKvLayer& kv, const AttentionShape& shape,
                   const float* q, float* out, int64_t t0, int64_t n, const int64_t* positions,
                   const int64_t* firsts, const int32_t* const* block_tables, float scale,
                   ThreadPool& pool) {
    const int64_t group = shape.n_heads / shape.n_kv_heads;
    const int64_t width = shape.n_heads * shape.head_dim;
    const auto first_of = [&](int64_t t) { return first_position(shape, positions, firsts, t); };
    int64_t n_chunks = 1;
    for (int64_t t = t0; t < t0 + n; ++t)
        n_chunks = std::max(n_chunks, chunk_count(first_of(t), positions[t]));
    const int64_t per_job = heads_per_job(shape, n, n_chunks, pool.size());
    const int64_t groups = shape.n_heads / per_job;  // head groups per token and chunk
    const int64_t jobs_per_token = groups * n_chunks;
    // Each chunk's result and (max, sum) per head, [token][chunk][width]: kept per calling
    // thread and grown to the largest pass, so decode allocates nothing.
    thread_local std::vector<float> parts, part_stats;
    if (n_chunks > 1) {
        parts.resize(std::max<size_t>(parts.size(), n * n_chunks * width));
        part_stats.resize(std::max<size_t>(part_stats.size(), n * n_chunks * shape.n_heads * 2));
    }
    float* const parts_data = parts.data();
    float* const stats_data = part_stats.data();
    thread_local std::vector<float> transformed;
    const float* queries = queries_for(kv.k, shape, q, t0, n, transformed);
    thread_local std::vector<QueryBlock> quantized;
    const QueryBlock* query_blocks =
        query_blocks_for(kv.k, queries, n * width, shape.head_dim, quantized);
    // A token within one chunk (most of a prefill) is attended straight into out; the chunks
    // of longer ranges go to the buffer and are merged after.
    pool.parallel_for(n * jobs_per_token, [&](int64_t begin, int64_t end, int) {
        for (int64_t job = begin; job < end; ++job) {
            // Head groups vary fastest: the groups of one chunk, which read the rows of one
            // stretch of slots, run one after another on one thread while it is in cache.
            const int64_t i = job / jobs_per_token, t = t0 + i;
            const int64_t c = job % jobs_per_token / groups, h = job % groups * per_job;
            const int64_t chunks = chunk_count(first_of(t), positions[t]);
            if (c >= chunks) continue;
            const Range r = chunk_range(first_of(t), positions[t], c);
            const bool whole = chunks == 1;
            const int64_t row = i * width + h * shape.head_dim;
            attend(kv, shape.head_dim, h / group, static_cast<int>(per_job), queries + row,
                   query_blocks ? query_blocks + row / kQK : nullptr,
                   whole ? out + t * width + h * shape.head_dim
                         : parts_data + (i * n_chunks + c) * width + h * shape.head_dim,
                   r.first, r.last, block_tables[t], scale,
                   whole ? nullptr : stats_data + ((i * n_chunks + c) * shape.n_heads + h) * 2);
        }
    });
    for (int64_t i = 0; i < n; ++i) {
        const int64_t chunks = chunk_count(first_of(t0 + i), positions[t0 + i]);
        if (chunks == 1) continue;
        for (int64_t h = 0; h < shape.n_heads; ++h)
            merge_chunks(parts_data + i * n_chunks * width + h * shape.head_dim, width,
                         stats_data + (i * n_chunks * shape.n_heads + h) * 2, shape.n_heads * 2,
                         chunks, shape.head_dim, out + (t0 + i) * width + h * shape.head_dim);
    }
}

// Runs of at least this many tokens of one sequence at consecutive positions (prefill
// chunks) are attended by tiles. Shorter ones, such as a speculative verify step (at most 33
// tokens), keep the token-by-token kernels, whose results a token's decode step shares bit for
// bit.
constexpr int64_t kMinTiledTokens = 64;

// The end of the run of tokens from t on that share t's block table at consecutive positions.
int64_t run_end(const int64_t* positions, const int32_t* const* block_tables, int64_t t,
                int64_t n_tokens) {
    int64_t end = t + 1;
    while (end < n_tokens && block_tables[end] == block_tables[t] &&
           positions[end] == positions[end - 1] + 1)
        ++end;
    return end;
}

// Tokens [t0, t0 + n) of one run by tiles: the queries as the keys are stored, and where the
// keys are scored in integers as their QueryBlocks hold them (AttendHeadsFn), so that a
// prefilled token's scores are the products the other kernels take.
void attend_run_tiled(const TileKernels& tile, const PagedKvLayer& kv, const AttentionShape& shape,
                      const float* q, float* out, int64_t t0, int64_t n, const int64_t* positions,
                      const int64_t* firsts, const int32_t* block_table, float scale,
                      ThreadPool& pool) {
    const int64_t width = shape.n_heads * shape.head_dim;
    thread_local std::vector<float> transformed, rounded;
    const float* queries = queries_for(kv.k, shape, q, t0, n, transformed);
    thread_local std::vector<QueryBlock> quantized;
    if (query_blocks_for(kv.k, queries, n * width, shape.head_dim, quantized) != nullptr) {
        rounded.resize(static_cast<size_t>(n * width));
        dequantize_query(quantized.data(), rounded.data(), n * width);
        queries = rounded.data();
    }
    std::vector<int64_t> first(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) first[i] = first_position(shape, positions, firsts, t0 + i);
    tiled_attention(tile, kv, shape, queries, out + t0 * width, n, first.data(), positions + t0,
                    block_table, scale, pool);
}

}  // namespace

// Read at every call rather than once, so that set_isa_cap takes effect at once.
AttendHeadsFn choose_attend_heads(int64_t head_dim, int64_t block_size) {
#if defined(__x86_64__)
    const Isa isa = active_isa();
    if (block_size <= kMaxKernelBlock) {
        if (isa >= Isa::Avx512 && head_dim % 16 == 0) return attend_heads_avx512;
        if (isa >= Isa::Avx2 && head_dim % 8 == 0) return attend_heads_avx2;
    }
#else
    (void)head_dim, (void)block_size;
#endif
    return attend_heads_scalar;
}

void add_first_key_scores(const PagedKvRows& k, int64_t kv_head, int64_t head_dim, int n_q,
                          const float* q, const QueryBlock* qb, float scale, float* scores,
                          int64_t stride) {
    const float* first = k.first_key + kv_head * head_dim;
    float q_read[kMaxHeadDim];
    for (int h = 0; h < n_q; ++h) {
        const float* qh = q + h * head_dim;
        if (qb) {
            dequantize_query(qb + h * head_dim / kQK, q_read, head_dim);
            qh = q_read;
        }
        float dot = 0.0f;
        for (int64_t i = 0; i < head_dim; ++i) dot += qh[i] * first[i];
        scores[h * stride] += scale * dot;
    }
}

void prefetch_block(const PagedKvLayer& kv, int64_t kv_head, const int32_t* block_table,
                    int64_t start, int64_t last) {
    if (start > last) return;
    constexpr int64_t kLine = 64;
    const int64_t bs = kv.block_size;
    const int64_t base = int64_t{block_table[start / bs]} * bs + start % bs;
    const int64_t n = std::min((start / bs + 1) * bs, last + 1) - start;
    for (const PagedKvRows* rows : {&kv.k, &kv.v})
        for (int64_t j = 0; j < n; ++j) {
            const uint8_t* row = rows->row(base + j, kv_head);
            for (int64_t b = 0; b < rows->head_bytes; b += kLine) __builtin_prefetch(row + b);
            __builtin_prefetch(row + rows->head_bytes - 1);  // a row need not start a line
        }
}

void quantize_query(const float* x, QueryBlock* y, int64_t n, int64_t head_dim) {
    for (int64_t h = 0; h < n / head_dim; ++h, x += head_dim, y += head_dim / kQK) {
        float amax = 0.0f;
        bool finite = true;
        for (int64_t i = 0; i < head_dim; ++i) {
            amax = std::max(amax, std::fabs(x[i]));
            finite = finite && std::isfinite(x[i]);
        }
        // A NaN or infinite query makes its scores NaN, as float products would.
        const float d = finite ? amax / 32767.0f : std::numeric_limits<float>::quiet_NaN();
        const float inverse = finite && amax > 0.0f ? 32767.0f / amax : 0.0f;
        for (int64_t i = 0; i < head_dim; ++i) {
            y[i / kQK].d = d;
            y[i / kQK].q[i % kQK] =
                static_cast<int16_t>(std::lrintf(finite ? x[i] * inverse : 0.0f));
        }
    }
}

void dequantize_query(const QueryBlock* x, float* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b)
        for (int i = 0; i < kQK; ++i) y[b * kQK + i] = x[b].d * x[b].q[i];
}

size_t kv_element_index(TensorType type) {
    for (size_t i = 0; i < kKvElementTypeCount; ++i)
        if (kKvElementTypes[i] == type) return i;
    fail("attention cannot read a {} KV cache", tensor_type_name(type));
}

void paged_attention(const PagedKvLayer& kv, const AttentionShape& shape, const float* q,
                     float* out, int64_t n_tokens, const int64_t* positions, const int64_t* firsts,
                     const int32_t* const* block_tables, float scale, ThreadPool& pool) {
    const AttendHeadsFn attend = choose_attend_heads(shape.head_dim, kv.block_size);
    const TileKernels tile = choose_tile_kernels(shape.head_dim);
    int64_t pending = 0;  // the first token not yet attended
    const auto attend_pending = [&](int64_t end) {
        for (int64_t t0 = pending; t0 < end; t0 += kTokensPerPass)
            attend_tokens(attend, kv, shape, q, out, t0, std::min(kTokensPerPass, end - t0),
                          positions, firsts, block_tables, scale, pool);
        pending = end;
    };
    for (int64_t t = 0, end; tile.block != nullptr && t < n_tokens; t = end) {
        end = run_end(positions, block_tables, t, n_tokens);
        if (end - t < kMinTiledTokens) continue;
        attend_pending(t);
        attend_run_tiled(tile, kv, shape, q, out, t, end - t, positions, firsts, block_tables[t],
                         scale, pool);
        pending = end;
    }
    attend_pending(n_tokens);
    if (kv.v.rotated) hadamard32_blocks(out, n_tokens * shape.n_heads * shape.head_dim);
}

}  // namespace kite
