// The forward pass of an encoder (Architecture::encoder): every input in one ragged batch,
// each token attending all tokens of its own input (kernels/attention/span_attention.h), no
// KV cache, and one pooled vector per input. Post-norm: LayerNorm(x + attention(x)), then
// LayerNorm(x + feed_forward(x)). Positions are rotary (nomic-bert) or learned embeddings added
// to the input (bert); biases are added where the file has them.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kernels/attention/span_attention.h"
#include "kernels/ops/ops.h"
#include "model/model.h"
#include "model/pooling.h"
#include "model/token_rows.h"
#include "quant/convert.h"

namespace kite {

// Where each input starts in the batch (and, last, where the batch ends), and each token's
// position in its input.
struct EncoderSpans {
    std::vector<int64_t> starts, position;
};

namespace {

// Inputs are split into batches of about this many tokens (a longer input goes alone), which
// bounds the activations: the feed-forward rows are n_ff floats per token.
constexpr int64_t kBatchTokens = 2048;

// LayerNorm of n tokens' rows of `width` in x, in place.
void layer_norm_rows(float* x, const std::vector<float>& weight, const std::vector<float>& bias,
                     int64_t n, int64_t width, float eps, ThreadPool& pool) {
    for_each_token(pool, n, [&](int64_t t) {
        layer_norm(x + t * width, weight.data(), bias.data(), x + t * width, width, eps);
    });
}

// RoPE of every query and key head at each token's position in its input.
void rotate_heads(const ModelConfig& c, int64_t l, const EncoderSpans& spans, int64_t T,
                  RunState& s, ThreadPool& pool) {
    const int64_t q_width = c.n_heads * c.head_dim, kv_width = c.n_kv_heads * c.head_dim;
    for_each_token(pool, T, [&](int64_t t) {
        float cos_sin[kMaxRopeDims];
        rope_angles(c.layers[l].rope, spans.position[t], cos_sin);
        for (int64_t h = 0; h < c.n_heads; ++h)
            rope_rotate(&s.q[t * q_width + h * c.head_dim], cos_sin, c.n_rot, c.arch->rope_style);
        for (int64_t h = 0; h < c.n_kv_heads; ++h)
            rope_rotate(&s.k[t * kv_width + h * c.head_dim], cos_sin, c.n_rot, c.arch->rope_style);
    });
}

// The feed-forward sub-layer of the T rows of s.x, into s.delta: gated (SwiGLU) or a plain
// GELU of the up projection, as the architecture says.
void feed_forward(const ModelConfig& c, const LayerWeights& w, int64_t T, RunState& s,
                  ThreadPool& pool) {
    if (c.arch->activation == Activation::GeluTanh) {
        matmul(w.w_up, s.x.data(), T, s.up.data(), s.scratch.data(), pool);
        add_bias_rows(s.up.data(), w.b_up, T, pool);
        for_each_token(pool, T, [&](int64_t t) { gelu_tanh(&s.up[t * c.n_ff], c.n_ff); });
        matmul(w.w_down, s.up.data(), T, s.delta.data(), s.scratch.data(), pool);
    } else {
        const MatmulTarget gate_up[] = {{&w.w_gate, s.gate.data()}, {&w.w_up, s.up.data()}};
        matmul_shared_input(gate_up, s.x.data(), T, s.scratch.data(), pool);
        for_each_token(pool, T,
                       [&](int64_t t) { swiglu(&s.gate[t * c.n_ff], &s.up[t * c.n_ff], c.n_ff); });
        matmul(w.w_down, s.gate.data(), T, s.delta.data(), s.scratch.data(), pool);
    }
    add_bias_rows(s.delta.data(), w.b_down, T, pool);
}

}  // namespace

void Model::encoder_layer(int64_t l, const EncoderSpans& spans, int64_t T, RunState& s,
                          ThreadPool& pool) const {
    const ModelConfig& c = config_;
    const LayerWeights& w = weights_.layers[l];
    const auto eps = static_cast<float>(c.layer_norm_eps);

    const MatmulTarget qkv[] = {{&w.wq, s.q.data()}, {&w.wk, s.k.data()}, {&w.wv, s.v.data()}};
    matmul_shared_input(qkv, s.x.data(), T, s.scratch.data(), pool);
    add_bias_rows(s.q.data(), w.bq, T, pool);
    add_bias_rows(s.k.data(), w.bk, T, pool);
    add_bias_rows(s.v.data(), w.bv, T, pool);
    // Without learned position embeddings, positions are rotary.
    if (!weights_.position_embd.data) rotate_heads(c, l, spans, T, s, pool);
    span_attention({c.n_heads, c.n_kv_heads, c.head_dim}, s.q.data(), s.k.data(), s.v.data(),
                   s.att.data(), {spans.starts.data(), int64_t(spans.starts.size()) - 1},
                   static_cast<float>(c.attention_scale), pool);
    matmul(w.wo, s.att.data(), T, s.delta.data(), s.scratch.data(), pool);
    add_bias_rows(s.delta.data(), w.bo, T, pool);
    add_rows(s.x.data(), s.delta.data(), T, c.n_embd, pool);
    layer_norm_rows(s.x.data(), w.attn_out_norm, w.attn_out_norm_bias, T, c.n_embd, eps, pool);

    feed_forward(c, w, T, s, pool);
    add_rows(s.x.data(), s.delta.data(), T, c.n_embd, pool);
    layer_norm_rows(s.x.data(), w.layer_out_norm, w.layer_out_norm_bias, T, c.n_embd, eps, pool);
}

// One batch of whole inputs: embeddings (token + segment 0, + position where the model
// learned them), their LayerNorm, the layers, and the pooled rows appended to `out`.
void Model::encode_batch(std::span<const std::vector<int32_t>> inputs, Pooling pooling, RunState& s,
                         ThreadPool& pool, std::vector<float>& out) const {
    const ModelConfig& c = config_;
    EncoderSpans spans;
    std::vector<int32_t> tokens;
    for (const std::vector<int32_t>& input : inputs) {
        spans.starts.push_back(int64_t(tokens.size()));
        for (int64_t i = 0; i < int64_t(input.size()); ++i) {
            spans.position.push_back(i);
            tokens.push_back(input[size_t(i)]);
        }
    }
    spans.starts.push_back(int64_t(tokens.size()));
    const auto T = int64_t(tokens.size());
    const WeightMatrix& embd = weights_.token_embd;
    const WeightMatrix& positions = weights_.position_embd;
    std::vector<float> segment(size_t(c.n_embd)), position(size_t(c.n_embd));
    dequantize_row(weights_.token_types.type, weights_.token_types.data, segment.data(), c.n_embd);
    for (int64_t t = 0; t < T; ++t) {
        float* x = &s.x[t * c.n_embd];
        dequantize_row(embd.type, embd.data + tokens[size_t(t)] * embd.row_bytes, x, c.n_embd);
        add_in_place(x, segment.data(), c.n_embd);
        if (!positions.data) continue;
        dequantize_row(positions.type, positions.data + spans.position[t] * positions.row_bytes,
                       position.data(), c.n_embd);
        add_in_place(x, position.data(), c.n_embd);
    }
    layer_norm_rows(s.x.data(), weights_.token_embd_norm, weights_.token_embd_norm_bias, T,
                    c.n_embd, static_cast<float>(c.layer_norm_eps), pool);
    for (int64_t l = 0; l < c.n_layers; ++l) encoder_layer(l, spans, T, s, pool);

    int64_t begin = 0;
    for (const std::vector<int32_t>& input : inputs) {
        const auto n = int64_t(input.size());
        const size_t at = out.size();
        out.resize(at + size_t(c.n_embd), 0.0f);
        pool_rows(pooling, &s.x[begin * c.n_embd], n, c.n_embd, &out[at]);
        begin += n;
    }
}

std::vector<float> Model::embed(std::span<const std::vector<int32_t>> inputs, ThreadPool& pool,
                                Pooling pooling) const {
    const ModelConfig& c = config_;
    if (pooling == Pooling::None) pooling = c.pooling;
    if (pooling == Pooling::None)
        fail("'{}' is a generative model ({}); it embeds with a pooling given (mean or last)",
             file_->name(), c.architecture);
    int64_t longest = 0;
    for (const std::vector<int32_t>& input : inputs) {
        if (input.empty()) fail("an input to embed has no tokens");
        if (int64_t(input.size()) > c.n_ctx_train)
            fail("an input of {} tokens is longer than the model's context of {} tokens",
                 input.size(), c.n_ctx_train);
        for (int32_t id : input)
            if (id < 0 || id >= c.n_vocab)
                fail("token id {} is out of range (the vocabulary has {} tokens)", id, c.n_vocab);
        longest = std::max(longest, int64_t(input.size()));
    }
    RunState s(c, std::max(kBatchTokens, longest), 0);
    std::vector<float> out;
    out.reserve(inputs.size() * size_t(c.n_embd));
    for (size_t first = 0; first < inputs.size();) {
        size_t last = first;
        int64_t tokens = 0;
        while (last < inputs.size() &&
               (last == first || tokens + int64_t(inputs[last].size()) <= kBatchTokens))
            tokens += int64_t(inputs[last++].size());
        const auto batch = inputs.subspan(first, last - first);
        if (c.arch->encoder)
            encode_batch(batch, pooling, s, pool, out);
        else
            embed_decoder_batch(batch, pooling, s, pool, out);
        first = last;
    }
    return out;
}

}  // namespace kite
