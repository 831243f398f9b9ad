// What a forward pass of a llama-family model costs: the FLOPs it computes and the bytes it
// reads from memory. `kite roofline` and `kite bench` both use these formulas.
//
// Names: L layers, H query heads, H_kv key/value heads, d_h head dimension, g = H / H_kv,
// b bytes per KV element, M_kv = 2 * b * L * H_kv * d_h (KV bytes per cached token),
// P_layers = elements of every layer matrix (wq wk wv wo w_gate w_up w_down),
// P_out = elements of the LM head (n_vocab * n_embd),
// W = W_layers + W_out, bytes of every weight a pass reads whole: the layer matrices and
//     norms, then the output norm and the LM head (a tied embedding is read whole as the LM
//     head),
// E_row = bytes of one embedding row (the lookup reads one row per token, not the table).
//
// One pass: B sequences, each with q new tokens after s cached ones (T = B*q tokens),
// logits for the last token of each sequence (as Kite computes them):
//   FLOPs = 2 * P_layers * T + 2 * P_out * B + B * A(q, s)
//   bytes = W + T * E_row + B * (s + q) * M_kv
// where A(q, s) = 4 * L * H * d_h * (q*s + q*(q+1)/2) is causal attention: each new token i
// (1..q) scores s + i keys (Q.K, 2 FLOPs per element) and sums as many values (2 more).
// So one decode token (B = q = 1) costs 2 * (P_layers + P_out) + 4*L*H*d_h*(s+1) FLOPs and
// W + E_row + (s+1) * M_kv bytes. A prompt chunk that does not end its prompt asks for no
// logits: no 2 * P_out * B, and W_layers instead of W. The K/V of each sequence is counted
// once per pass (read whole, reused across the new tokens); activations are counted as free
// (they stay in cache), and so are KV writes.
//
// Attention alone, q new tokens over s cached: FLOPs A(q, s), bytes (s + q) * M_kv, so
//   AI = (2 * g / b) * (q*s + q*(q+1)/2) / (s + q)   ~ (2g/b) * s*q/(s+q)
// (the approximation drops the causal q*(q+1)/2), which is ~2g/b FLOPs/byte in decode
// (q = 1) however long the context, and grows to ~(2g/b) * q once s >> q.
#pragma once

#include <cstdint>
#include <map>

#include "gguf/gguf_file.h"
#include "model/model_config.h"

namespace kite {

struct PassCost {
    double flops = 0;
    double bytes = 0;

    double intensity() const { return bytes > 0 ? flops / bytes : 0; }  // FLOPs per byte
    PassCost& operator+=(const PassCost& o) {
        flops += o.flops, bytes += o.bytes;
        return *this;
    }
    PassCost operator/(double n) const { return {flops / n, bytes / n}; }
};

// Weights of one type that a pass reads whole.
struct TypeBytes {
    uint64_t params = 0, bytes = 0;
    double bits_per_weight() const { return params ? 8.0 * double(bytes) / double(params) : 0; }
};

struct ModelCost {
    int64_t n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
    uint64_t layer_params = 0;    // P_layers
    uint64_t output_params = 0;   // P_out
    uint64_t layer_bytes = 0;     // W_layers: the layer matrices and norms, as stored
    uint64_t output_bytes = 0;    // W_out: LM head (the embedding table when tied), output norm
    uint64_t embd_row_bytes = 0;  // E_row
    bool tied_output = false;     // the LM head is the embedding table
    // W by weight type, each matrix at its own type's bytes (a Q4_K_M file mixes Q4_K, Q6_K,
    // Q5_0 and Q8_0 matrices); norms count as F32.
    std::map<TensorType, TypeBytes> weight_types;

    uint64_t matmul_params() const { return layer_params + output_params; }
    uint64_t weight_bytes() const { return layer_bytes + output_bytes; }  // W
    // M_kv for `kv_bytes_per_element` (b) bytes per element: a fraction for the block
    // formats (34/32 for q8_0, 18/32 for q4_0; the mean of the two when keys and values differ).
    double kv_bytes_per_token(double kv_bytes_per_element) const {
        return 2 * kv_bytes_per_element * static_cast<double>(n_layers * n_kv_heads * head_dim);
    }
    // A(q, s): attention FLOPs of q new tokens of one sequence over s cached ones.
    double attention_flops(int64_t q, int64_t s) const;
    // An encoder's FLOPs for one input of n tokens, in one pass with no KV cache and no LM
    // head: 2 * P_layers * n + 4 * L * H * d_h * n^2 (every token scores all n tokens of its
    // input, 2 FLOPs per element, and sums as many values, 2 more).
    double encoder_flops(int64_t n) const;

    // One forward pass (see the formulas above). Without logits (a prompt chunk that does
    // not end its prompt) the pass neither reads nor multiplies the LM head.
    PassCost pass(int64_t n_seqs, int64_t q, int64_t s, double kv_bytes_per_element,
                  bool logits = true) const;
    // Prefilling one prompt of n tokens in passes of at most `chunk` tokens, logits at the end.
    PassCost prefill(int64_t n, int64_t chunk, double kv_bytes_per_element) const;
    // Attention alone for one sequence: A(q, s) FLOPs over (s + q) * M_kv bytes.
    PassCost attention(int64_t q, int64_t s, double kv_bytes_per_element) const;
    // Decoding n tokens in each of B sequences, one token per pass, the first pass with s
    // cached tokens: the sum of pass(B, 1, s + i) for i < n.
    PassCost decode(int64_t n_seqs, int64_t n, int64_t s, double kv_bytes_per_element) const;
};

// From the weights the model binds (kite::bind_weights): throws kite::Error like it does.
ModelCost model_cost(const GgufFile& file, const ModelConfig& config);

}  // namespace kite
