// A decoder-only transformer of one of the architectures architecture.h describes:
// forward(batch) writes the batch's keys/values into the KV cache and returns next-token
// logits for the rows that asked for them.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/lazy_vector.h"
#include "core/thread_pool.h"
#include "gguf/gguf_file.h"
#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/model_config.h"
#include "model/weights.h"

namespace kite {

// Activations of one forward pass, allocated once for up to `max_tokens` tokens per step
// and `max_logits` logits rows, so steps allocate nothing. The buffers are sized for the
// largest step and are resident only as far as steps have written them (lazy_vector.h).
struct RunState {
    RunState(const ModelConfig& c, int64_t max_tokens, int64_t max_logits);

    int64_t max_tokens, max_logits;
    LazyVector<float> x;                       // residual stream [T][n_embd]
    LazyVector<float> xb;                      // normalised input of a sub-layer [T][n_embd]
    LazyVector<float> q;                       // [T][n_heads * head_dim]
    LazyVector<float> k, v;                    // [T][n_kv_heads * head_dim]
    LazyVector<float> att;                     // attention output [T][n_heads * head_dim]
    LazyVector<float> delta;                   // a sub-layer's output [T][n_embd]
    LazyVector<float> gate, up;                // feed-forward hidden [T][n_ff]
    LazyVector<float> logits;                  // [max_logits][n_vocab]
    std::vector<const int32_t*> block_tables;  // per token
    std::vector<int64_t> firsts;               // per token: its sequence's first position
    std::vector<int64_t> rope_positions;       // per token: position + its rope offset
    LazyVector<uint8_t> scratch;               // prepared activations for matmul
    // Set by a calibration run (model/key_calibration_run.h): each layer's queries and keys
    // are added to it, after RoPE.
    KeyStatistics* key_statistics = nullptr;
};

struct EncoderSpans;

class Model {
  public:
    // Loads and validates the file; throws kite::Error. `requantize`: the matrices of larger
    // types are converted to it at load (weights.h: pack_matrices).
    static std::unique_ptr<Model> load(const std::string& path,
                                       std::optional<TensorType> requantize = std::nullopt);

    const ModelConfig& config() const { return config_; }
    const GgufFile& file() const { return *file_; }
    // The bytes its weights hold, packed (weights.h: resident_weight_bytes).
    size_t weight_bytes() const { return weight_bytes_; }
    KvCacheShape kv_shape() const {
        return {config_.n_layers, config_.n_kv_heads, config_.head_dim};
    }

    // Runs the batch; returns logits [batch.logits_rows.size()][n_vocab] inside `state`
    // ([...][batch.logits_vocab] where that is set).
    const float* forward(const Batch& batch, KvCache& kv, RunState& state, ThreadPool& pool) const;

    // Embeddings: one pooled vector of n_embd per input (not normalised), in order. Inputs go
    // through in ragged batches, without padding. An encoder pools as its file says unless
    // `pooling` says otherwise; a decoder pools its final hidden state after the output norm
    // and needs `pooling`. Throws kite::Error for a decoder without one, an empty input, one
    // longer than the context, or a token id out of range.
    std::vector<float> embed(std::span<const std::vector<int32_t>> inputs, ThreadPool& pool,
                             Pooling pooling = Pooling::None) const;
    bool can_embed() const { return config_.arch->encoder; }

  private:
    void encoder_layer(int64_t layer, const EncoderSpans& spans, int64_t n_tokens, RunState& s,
                       ThreadPool& pool) const;
    void encode_batch(std::span<const std::vector<int32_t>> inputs, Pooling pooling, RunState& s,
                      ThreadPool& pool, std::vector<float>& out) const;
    void embed_decoder_batch(std::span<const std::vector<int32_t>> inputs, Pooling pooling,
                             RunState& s, ThreadPool& pool, std::vector<float>& out) const;
    void attention_block(int64_t layer, const Batch& batch, KvCache& kv, RunState& s,
                         ThreadPool& pool) const;
    void feed_forward_block(int64_t layer, int64_t n_tokens, RunState& s, ThreadPool& pool) const;

    std::unique_ptr<GgufFile> file_;
    ModelConfig config_;
    ModelWeights weights_;
    size_t weight_bytes_ = 0;
};

}  // namespace kite
