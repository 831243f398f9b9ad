// Embeddings from a generative (decoder) model: its causal forward pass over each input, from
// an empty KV cache of its own, and the pooled final hidden state after the output norm, as
// llama.cpp's embeddings of a decoder are (mean or last token, as asked). Inputs go through
// in ragged batches like an encoder's, each input one sequence of the batch.
#include <algorithm>

#include "core/error.h"
#include "kernels/ops/ops.h"
#include "model/model.h"
#include "model/pooling.h"

namespace kite {

namespace {

constexpr int64_t kBlockSize = 16;  // KV slots per block: as the engine's

// Blocks for n tokens.
int64_t blocks_for(int64_t n) {
    return (n + kBlockSize - 1) / kBlockSize;
}

}  // namespace

void Model::embed_decoder_batch(std::span<const std::vector<int32_t>> inputs, Pooling pooling,
                                RunState& s, ThreadPool& pool, std::vector<float>& out) const {
    const ModelConfig& c = config_;
    int64_t n_blocks = 0;
    for (const std::vector<int32_t>& input : inputs) n_blocks += blocks_for(int64_t(input.size()));
    KvCache kv(kv_shape(), KvTypes{}, n_blocks, kBlockSize);
    // Each input's blocks follow the previous input's: block tables are runs of ids.
    std::vector<std::vector<int32_t>> tables;
    Batch batch;
    int64_t first_block = 0;
    for (const std::vector<int32_t>& input : inputs) {
        const auto n = int64_t(input.size());
        std::vector<int32_t>& table = tables.emplace_back(size_t(blocks_for(n)));
        for (size_t b = 0; b < table.size(); ++b) table[b] = int32_t(first_block + int64_t(b));
        batch.sequences.push_back({int64_t(batch.tokens.size()), n, n, nullptr});
        for (int64_t p = 0; p < n; ++p) {
            batch.tokens.push_back(input[size_t(p)]);
            batch.positions.push_back(p);
            batch.slots.push_back(first_block * kBlockSize + p);
        }
        first_block += blocks_for(n);
    }
    for (size_t i = 0; i < inputs.size(); ++i) batch.sequences[i].block_table = tables[i].data();
    forward(batch, kv, s, pool);  // no logits rows: only the hidden states are wanted

    const auto eps = static_cast<float>(c.rms_norm_eps);
    std::vector<float> normed;
    for (const BatchSequence& seq : batch.sequences) {
        // Only the rows the pooling reads go through the output norm.
        const int64_t first = pooling == Pooling::Last ? seq.query_len - 1 : 0;
        const int64_t rows = pooling == Pooling::Mean ? seq.query_len : 1;
        normed.resize(size_t(rows * c.n_embd));
        for (int64_t r = 0; r < rows; ++r)
            rms_norm(&s.x[(seq.query_start + first + r) * c.n_embd], weights_.output_norm.data(),
                     &normed[size_t(r * c.n_embd)], c.n_embd, eps);
        const size_t at = out.size();
        out.resize(at + size_t(c.n_embd));
        pool_rows(Pooling::Mean, normed.data(), rows, c.n_embd, &out[at]);  // one row: itself
    }
}

}  // namespace kite
