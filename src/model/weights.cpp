#include "model/weights.h"

#include <fmt/format.h>

#include "core/error.h"
#include "kernels/isa.h"
#include "kernels/weight_kernels.h"
#include "model/weight_validation.h"
#include "quant/convert.h"

namespace kite {

namespace {

const GgufTensor& require(const GgufFile& f, const std::string& name) {
    const GgufTensor* t = f.find_tensor(name);
    if (!t) fail("'{}': tensor '{}' is missing", f.name(), name);
    if (!weight_kernels(t->type()) || !row_conversion(t->type()))
        fail("'{}': tensor '{}' has type {}, which Kite cannot compute with yet (supported: {})",
             f.name(), name, tensor_type_name(t->type_id), compute_type_names());
    return *t;
}

WeightMatrix matrix(const GgufFile& f, const std::string& name, int64_t cols, int64_t rows) {
    const GgufTensor& t = require(f, name);
    if (t.n_dims != 2 || int64_t(t.dims[0]) != cols || int64_t(t.dims[1]) != rows)
        fail("'{}': tensor '{}' has shape [{}, {}], expected [{}, {}]", f.name(), name, t.dims[0],
             t.dims[1], cols, rows);
    return {t.type(), t.data, rows, cols, row_bytes(t.type(), cols)};
}

std::vector<float> vector(const GgufFile& f, const std::string& name, int64_t n) {
    const GgufTensor& t = require(f, name);
    if (t.n_elements != uint64_t(n))
        fail("'{}': tensor '{}' has {} elements, expected {}", f.name(), name, t.n_elements, n);
    std::vector<float> out(n);
    dequantize_row(t.type(), t.data, out.data(), n);
    return out;
}

// The file's copy of a packed matrix is not read again (but for token embedding rows of a
// tied LM head, which page back in as needed), so its pages leave the resident set.
void pack(const GgufFile& f, WeightMatrix& m, std::vector<PackedBytes>& owner) {
    const PackedKernels* kernels = packed_kernels(m.type, active_isa());
    if (!kernels) return;
    owner.push_back(pack_weights(m, *kernels));
    m.packed = owner.back().get();
    m.kernels = kernels;
    f.drop_pages(m.data, m.rows * m.row_bytes);
}

}  // namespace

ModelWeights bind_weights(const GgufFile& f, const ModelConfig& c) {
    validate_tensor_values(f);
    ModelWeights w;
    const int64_t q_width = c.n_heads * c.head_dim, kv_width = c.n_kv_heads * c.head_dim;
    w.token_embd = matrix(f, "token_embd.weight", c.n_embd, c.n_vocab);
    for (int64_t l = 0; l < c.n_layers; ++l) {
        auto name = [l](const char* leaf) { return fmt::format("blk.{}.{}.weight", l, leaf); };
        LayerWeights lw;
        lw.attn_norm = vector(f, name("attn_norm"), c.n_embd);
        lw.wq = matrix(f, name("attn_q"), c.n_embd, q_width);
        lw.wk = matrix(f, name("attn_k"), c.n_embd, kv_width);
        lw.wv = matrix(f, name("attn_v"), c.n_embd, kv_width);
        lw.wo = matrix(f, name("attn_output"), q_width, c.n_embd);
        lw.ffn_norm = vector(f, name("ffn_norm"), c.n_embd);
        lw.w_gate = matrix(f, name("ffn_gate"), c.n_embd, c.n_ff);
        lw.w_up = matrix(f, name("ffn_up"), c.n_embd, c.n_ff);
        lw.w_down = matrix(f, name("ffn_down"), c.n_ff, c.n_embd);
        w.layers.push_back(std::move(lw));
    }
    w.output_norm = vector(f, "output_norm.weight", c.n_embd);
    w.output = f.find_tensor("output.weight") ? matrix(f, "output.weight", c.n_embd, c.n_vocab)
                                              : w.token_embd;
    return w;
}

void pack_matrices(const GgufFile& f, ModelWeights& w) {
    for (LayerWeights& l : w.layers)
        for (WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
            pack(f, *m, w.packed);
    pack(f, w.output, w.packed);
}

}  // namespace kite
