#include "model/model.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kernels/attention/attention.h"
#include "kernels/ops/ops.h"
#include "model/token_rows.h"
#include "model/weight_validation.h"
#include "quant/convert.h"

namespace kite {

RunState::RunState(const ModelConfig& c, int64_t max_tokens_, int64_t max_logits_)
    : max_tokens(max_tokens_),
      max_logits(max_logits_),
      x(max_tokens * c.n_embd),
      xb(max_tokens * std::max(c.n_embd, c.n_heads * c.head_dim)),
      q(max_tokens * c.n_heads * c.head_dim),
      k(max_tokens * c.n_kv_heads * c.head_dim),
      v(max_tokens * c.n_kv_heads * c.head_dim),
      att(max_tokens * c.n_heads * c.head_dim),
      delta(max_tokens * c.n_embd),
      gate(max_tokens * c.n_ff),
      up(max_tokens * c.n_ff),
      logits(max_logits * c.n_vocab),
      block_tables(max_tokens),
      firsts(max_tokens),
      rope_positions(max_tokens) {
    // Enough for the widest input any matmul prepares.
    scratch.resize(matmul_scratch_bytes_any_type(
        std::max({c.n_embd, c.n_ff, c.n_heads * c.head_dim}), max_tokens));
}

std::unique_ptr<Model> Model::load(const std::string& path, std::optional<TensorType> requantize) {
    std::unique_ptr<Model> m(new Model());
    m->file_ = GgufFile::open(path);
    m->config_ = read_model_config(*m->file_);
    if (m->config_.head_dim > kMaxHeadDim)
        fail("'{}': head dimension {} is not supported (at most {})", path, m->config_.head_dim,
             kMaxHeadDim);
    // Values are checked only for inference: shapes and costs (kite roofline, kite bench's
    // cost model) bind the weights without reading them.
    validate_tensor_values(*m->file_);
    m->weights_ = bind_weights(*m->file_, m->config_);
    // LongRoPE's short factors serve contexts up to the original length; Kite does not switch
    // to the long ones beyond it yet.
    const std::vector<float>& factors =
        !m->weights_.rope_freqs.empty() ? m->weights_.rope_freqs : m->weights_.rope_factors_short;
    for (LayerAttention& layer : m->config_.layers)
        if (layer.window == 0 && !factors.empty()) layer.rope.freq_factors = factors.data();
    m->weight_bytes_ = resident_weight_bytes(*m->file_, m->weights_, active_isa());
    pack_matrices(*m->file_, m->weights_, requantize);
    return m;
}

// Sub-layers branch on what the layer's weights hold: biases, per-head q/k norms and post-norms
// are applied where the architecture has them.
void Model::attention_block(int64_t l, const Batch& b, KvCache& kv, RunState& s,
                            ThreadPool& pool) const {
    const ModelConfig& c = config_;
    const LayerWeights& w = weights_.layers[l];
    const LayerAttention& layer = c.layers[l];
    const int64_t T = static_cast<int64_t>(b.tokens.size());
    const int64_t q_width = c.n_heads * c.head_dim, kv_width = c.n_kv_heads * c.head_dim;
    const float eps = static_cast<float>(c.rms_norm_eps);

    rms_norm_rows(s.x.data(), w.attn_norm, s.xb.data(), T, c.n_embd, eps, pool);
    const MatmulTarget qkv[] = {{&w.wq, s.q.data()}, {&w.wk, s.k.data()}, {&w.wv, s.v.data()}};
    matmul_shared_input(qkv, s.xb.data(), T, s.scratch.data(), pool);
    add_bias_rows(s.q.data(), w.bq, T, pool);
    add_bias_rows(s.k.data(), w.bk, T, pool);
    add_bias_rows(s.v.data(), w.bv, T, pool);

    for_each_token(pool, T, [&](int64_t t) {
        float* q = &s.q[t * q_width];
        float* k = &s.k[t * kv_width];
        if (!w.attn_q_norm.empty()) norm_rows(q, w.attn_q_norm, c.n_heads, c.head_dim, eps);
        if (!w.attn_k_norm.empty()) norm_rows(k, w.attn_k_norm, c.n_kv_heads, c.head_dim, eps);
        float cos_sin[kMaxRopeDims];
        rope_angles(layer.rope, s.rope_positions[t], cos_sin);
        for (int64_t h = 0; h < c.n_heads; ++h)
            rope_rotate(q + h * c.head_dim, cos_sin, c.n_rot, layer.rope.style);
        for (int64_t h = 0; h < c.n_kv_heads; ++h)
            rope_rotate(k + h * c.head_dim, cos_sin, c.n_rot, layer.rope.style);
        kv.write(l, b.slots[t], b.positions[t], k, &s.v[t * kv_width]);
    });
    if (s.key_statistics != nullptr)  // it accumulates: one thread
        for (int64_t t = 0; t < T; ++t)
            s.key_statistics->add(l, b.positions[t], &s.q[t * q_width], &s.k[t * kv_width]);

    const AttentionShape shape{c.n_heads, c.n_kv_heads, c.head_dim, layer.window};
    paged_attention(kv.layer(l), shape, s.q.data(), s.att.data(), T, b.positions.data(),
                    s.firsts.data(), s.block_tables.data(), static_cast<float>(c.attention_scale),
                    pool);
    matmul(w.wo, s.att.data(), T, s.delta.data(), s.scratch.data(), pool);
    if (!w.attn_post_norm.empty())
        rms_norm_rows(s.delta.data(), w.attn_post_norm, s.delta.data(), T, c.n_embd, eps, pool);
    add_rows(s.x.data(), s.delta.data(), T, c.n_embd, pool);
}

void Model::feed_forward_block(int64_t l, int64_t T, RunState& s, ThreadPool& pool) const {
    const ModelConfig& c = config_;
    const LayerWeights& w = weights_.layers[l];
    const float eps = static_cast<float>(c.rms_norm_eps);
    rms_norm_rows(s.x.data(), w.ffn_norm, s.xb.data(), T, c.n_embd, eps, pool);
    const MatmulTarget gate_up[] = {{&w.w_gate, s.gate.data()}, {&w.w_up, s.up.data()}};
    matmul_shared_input(gate_up, s.xb.data(), T, s.scratch.data(), pool);
    for_each_token(pool, T, [&](int64_t t) {
        float* gate = &s.gate[t * c.n_ff];
        const float* up = &s.up[t * c.n_ff];
        if (c.arch->activation == Activation::GeGluTanh)
            geglu_tanh(gate, up, c.n_ff);
        else
            swiglu(gate, up, c.n_ff);
    });
    matmul(w.w_down, s.gate.data(), T, s.delta.data(), s.scratch.data(), pool);
    if (!w.ffn_post_norm.empty())
        rms_norm_rows(s.delta.data(), w.ffn_post_norm, s.delta.data(), T, c.n_embd, eps, pool);
    add_rows(s.x.data(), s.delta.data(), T, c.n_embd, pool);
}

const float* Model::forward(const Batch& b, KvCache& kv, RunState& s, ThreadPool& pool) const {
    const ModelConfig& c = config_;
    if (c.arch->encoder)
        fail("'{}' is an embedding model ({}); it cannot generate text (use kite embed)",
             file_->name(), c.architecture);
    const int64_t T = static_cast<int64_t>(b.tokens.size());
    const int64_t R = static_cast<int64_t>(b.logits_rows.size());
    if (T > s.max_tokens || R > s.max_logits)
        fail("batch of {} tokens / {} logits rows exceeds the run state ({} / {})", T, R,
             s.max_tokens, s.max_logits);
    if (b.logits_vocab < 0 || b.logits_vocab > c.n_vocab)
        fail("logits for the first {} token ids of a vocabulary of {}", b.logits_vocab, c.n_vocab);

    for (const BatchSequence& seq : b.sequences)
        for (int64_t t = seq.query_start; t < seq.query_start + seq.query_len; ++t) {
            s.block_tables[t] = seq.block_table;
            s.firsts[t] = seq.first;
            s.rope_positions[t] = b.positions[t] + seq.rope_offset;
        }
    const WeightMatrix& embd = weights_.token_embd;
    const float scale = c.arch->scale_embedding ? std::sqrt(static_cast<float>(c.n_embd)) : 1.0f;
    for_each_token(pool, T, [&](int64_t t) {
        float* x = &s.x[t * c.n_embd];
        dequantize_row(embd.type, embd.data + b.tokens[t] * embd.row_bytes, x, c.n_embd);
        if (c.arch->scale_embedding)
            for (int64_t i = 0; i < c.n_embd; ++i) x[i] *= scale;
    });

    for (int64_t l = 0; l < c.n_layers; ++l) {
        attention_block(l, b, kv, s, pool);
        feed_forward_block(l, T, s, pool);
    }

    for (int64_t r = 0; r < R; ++r)
        rms_norm(&s.x[b.logits_rows[r] * c.n_embd], weights_.output_norm.data(),
                 &s.xb[r * c.n_embd], c.n_embd, static_cast<float>(c.rms_norm_eps));
    WeightMatrix output = weights_.output;  // its first rows are the first ids' logits
    if (b.logits_vocab > 0) output.rows = b.logits_vocab;
    matmul(output, s.xb.data(), R, s.logits.data(), s.scratch.data(), pool);
    return s.logits.data();
}

}  // namespace kite
