#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "kernels/attention_kernels.h"
#include "kernels/isa.h"
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
void attend_head(const PagedKvLayer& kv, int64_t head_dim, int64_t kv_head, const float* q,
                 float* out, int64_t first, int64_t last, const int32_t* block_table, float scale) {
    float acc[kMaxHeadDim] = {}, k[kMaxHeadDim], v[kMaxHeadDim];
    float max_score = -std::numeric_limits<float>::infinity(), sum = 0.0f;
    for (int64_t p = first; p <= last; ++p) {
        const int64_t slot =
            int64_t{block_table[p / kv.block_size]} * kv.block_size + p % kv.block_size;
        load_row(kv.k, slot, kv_head, head_dim, k);
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
}

// The scalar reference, for the heads one job attends.
void attend_heads_scalar(const PagedKvLayer& kv, int64_t head_dim, int64_t kv_head, int n_q,
                         const float* q, float* out, int64_t first, int64_t last,
                         const int32_t* block_table, float scale) {
    for (int h = 0; h < n_q; ++h)
        attend_head(kv, head_dim, kv_head, q + h * head_dim, out + h * head_dim, first, last,
                    block_table, scale);
}

// Read at every call rather than once, so that set_isa_cap takes effect at once.
AttendHeadsFn choose_kernel(int64_t head_dim, int64_t block_size) {
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

// The n query values as the keys are stored: rotated into `buffer` when the keys are.
const float* queries_for(const PagedKvRows& keys, const float* q, int64_t n, float* buffer) {
    if (!keys.rotated) return q;
    std::copy(q, q + n, buffer);
    hadamard32_blocks(buffer, n);
    return buffer;
}

}  // namespace

size_t kv_element_index(TensorType type) {
    for (size_t i = 0; i < kKvElementTypeCount; ++i)
        if (kKvElementTypes[i] == type) return i;
    fail("attention cannot read a {} KV cache", tensor_type_name(type));
}

void paged_attention(const PagedKvLayer& kv, const AttentionShape& shape, const float* q,
                     float* out, int64_t n_tokens, const int64_t* positions, const int64_t* firsts,
                     const int32_t* const* block_tables, float scale, ThreadPool& pool) {
    const AttendHeadsFn attend = choose_kernel(shape.head_dim, kv.block_size);
    const int64_t group = shape.n_heads / shape.n_kv_heads;
    const int64_t width = shape.n_heads * shape.head_dim;
    // Jobs of the query heads sharing a KV head when there are enough of them to keep every
    // thread busy (prefill, batches); single heads otherwise (one decoding token).
    int64_t per_job = 1;
    if (n_tokens * shape.n_kv_heads >= 4 * pool.size())  // the most that divide the group
        for (per_job = std::min<int64_t>(group, kMaxGroup); group % per_job;) --per_job;
    const int64_t jobs_per_token = shape.n_heads / per_job;
    pool.parallel_for(n_tokens * jobs_per_token, [&](int64_t begin, int64_t end, int) {
        for (int64_t job = begin; job < end; ++job) {
            const int64_t t = job / jobs_per_token, h = (job % jobs_per_token) * per_job;
            const int64_t at = t * width + h * shape.head_dim;
            const int64_t first =
                std::max(firsts ? firsts[t] : 0,
                         shape.window > 0 ? positions[t] - shape.window + 1 : int64_t{0});
            float rotated[kMaxGroup * kMaxHeadDim];
            attend(kv, shape.head_dim, h / group, static_cast<int>(per_job),
                   queries_for(kv.k, q + at, per_job * shape.head_dim, rotated), out + at, first,
                   positions[t], block_tables[t], scale);
        }
    });
}

}  // namespace kite
