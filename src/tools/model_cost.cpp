#include "tools/model_cost.h"

#include <algorithm>

#include "model/weights.h"

namespace kite {

namespace {

uint64_t params(const WeightMatrix& w) {
    return static_cast<uint64_t>(w.rows) * static_cast<uint64_t>(w.cols);
}

uint64_t bytes(const WeightMatrix& w) {
    return static_cast<uint64_t>(w.rows) * w.row_bytes;
}

uint64_t bytes(const std::vector<float>& norm) {
    return norm.size() * sizeof(float);
}

void add(std::map<TensorType, TypeBytes>& by_type, const WeightMatrix& w) {
    TypeBytes& t = by_type[w.type];
    t.params += params(w);
    t.bytes += bytes(w);
}

void add(std::map<TensorType, TypeBytes>& by_type, const std::vector<float>& norm) {
    TypeBytes& t = by_type[TensorType::F32];
    t.params += norm.size();
    t.bytes += bytes(norm);
}

}  // namespace

ModelCost model_cost(const GgufFile& file, const ModelConfig& c) {
    const ModelWeights w = bind_weights(file, c);
    ModelCost m;
    m.n_layers = c.n_layers;
    m.n_heads = c.n_heads;
    m.n_kv_heads = c.n_kv_heads;
    m.head_dim = c.head_dim;
    for (const LayerWeights& l : w.layers) {
        for (const WeightMatrix* mat :
             {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
            m.layer_params += params(*mat);
            m.layer_bytes += bytes(*mat);
            add(m.weight_types, *mat);
        }
        m.layer_bytes += bytes(l.attn_norm) + bytes(l.ffn_norm);
        add(m.weight_types, l.attn_norm);
        add(m.weight_types, l.ffn_norm);
    }
    m.output_params = params(w.output);
    m.output_bytes = bytes(w.output) + bytes(w.output_norm);
    add(m.weight_types, w.output);
    add(m.weight_types, w.output_norm);
    m.embd_row_bytes = w.token_embd.row_bytes;
    m.tied_output = w.output.data == w.token_embd.data;
    return m;
}

double ModelCost::attention_flops(int64_t q, int64_t s) const {
    const double keys = static_cast<double>(q) * static_cast<double>(s) +
                        static_cast<double>(q) * static_cast<double>(q + 1) / 2;
    return 4.0 * static_cast<double>(n_layers * n_heads * head_dim) * keys;
}

double ModelCost::encoder_flops(int64_t n) const {
    const auto tokens = static_cast<double>(n);
    return 2.0 * static_cast<double>(layer_params) * tokens +
           4.0 * static_cast<double>(n_layers * n_heads * head_dim) * tokens * tokens;
}

PassCost ModelCost::pass(int64_t n_seqs, int64_t q, int64_t s, double b, bool logits) const {
    const double B = static_cast<double>(n_seqs), T = B * static_cast<double>(q);
    const double head = logits ? 1.0 : 0.0;
    PassCost p;
    p.flops = 2.0 * static_cast<double>(layer_params) * T +
              head * 2.0 * static_cast<double>(output_params) * B + B * attention_flops(q, s);
    p.bytes = static_cast<double>(layer_bytes) + head * static_cast<double>(output_bytes) +
              T * static_cast<double>(embd_row_bytes) +
              B * static_cast<double>(s + q) * kv_bytes_per_token(b);
    return p;
}

PassCost ModelCost::prefill(int64_t n, int64_t chunk, double b) const {
    PassCost total;
    for (int64_t s = 0; s < n; s += chunk) {
        const int64_t q = std::min(chunk, n - s);
        total += pass(1, q, s, b, s + q == n);
    }
    return total;
}

PassCost ModelCost::attention(int64_t q, int64_t s, double b) const {
    return {attention_flops(q, s), static_cast<double>(s + q) * kv_bytes_per_token(b)};
}

PassCost ModelCost::decode(int64_t n_seqs, int64_t n, int64_t s, double b) const {
    PassCost total;
    for (int64_t i = 0; i < n; ++i) total += pass(n_seqs, 1, s + i, b);
    return total;
}

}  // namespace kite
