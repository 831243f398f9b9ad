#include "model/weights.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "core/error.h"
#include "core/huge_pages.h"
#include "core/thread_pool.h"
#include "kernels/cpu/isa.h"
#include "kernels/gemm/packed_gemm.h"
#include "kernels/gemm/weight_kernels.h"
#include "quant/convert.h"

namespace kite {

namespace {

int64_t size_of(Dim d, const ModelConfig& c) {
    switch (d) {
        case Dim::One:
            return 1;
        case Dim::Embd:
            return c.n_embd;
        case Dim::Ff:
            return c.n_ff;
        case Dim::Ff2:
            return 2 * c.n_ff;
        case Dim::QWidth:
            return c.n_heads * c.head_dim;
        case Dim::KvWidth:
            return c.n_kv_heads * c.head_dim;
        case Dim::QkvWidth:
            return (c.n_heads + 2 * c.n_kv_heads) * c.head_dim;
        case Dim::HeadDim:
            return c.head_dim;
        case Dim::Vocab:
            return c.n_vocab;
        case Dim::RotHalf:
            return c.n_rot / 2;
        case Dim::Segments:
            return c.n_token_types;
        case Dim::Ctx:
            return c.n_ctx_train;
    }
    return 0;
}

void check_type(const GgufFile& f, const GgufTensor& t) {
    if (!weight_kernels(t.type()) || !row_conversion(t.type()))
        fail("'{}': tensor '{}' has type {}, which Kite cannot compute with yet (supported: {})",
             f.name(), t.name, tensor_type_name(t.type_id), compute_type_names());
}

WeightMatrix matrix(const GgufFile& f, const GgufTensor& t, int64_t cols, int64_t rows) {
    if (t.n_dims != 2 || int64_t(t.dims[0]) != cols || int64_t(t.dims[1]) != rows)
        fail("'{}': tensor '{}' has shape [{}, {}], expected [{}, {}]", f.name(), t.name, t.dims[0],
             t.dims[1], cols, rows);
    return {t.type(), t.data, rows, cols, row_bytes(t.type(), cols)};
}

std::vector<float> vector(const GgufFile& f, const GgufTensor& t, int64_t n) {
    if (t.n_dims != 1 || t.n_elements != uint64_t(n))
        fail("'{}': tensor '{}' has {} elements in {} dimensions, expected {} in 1", f.name(),
             t.name, t.n_elements, t.n_dims, n);
    std::vector<float> out(n);
    dequantize_row(t.type(), t.data, out.data(), n);
    return out;
}

// Rows [first, first + n) of m, as a matrix of their own.
WeightMatrix rows_of(const WeightMatrix& m, int64_t first, int64_t n) {
    WeightMatrix part = m;
    part.data = m.data + first * m.row_bytes;
    part.rows = n;
    return part;
}

// Stores tensor t (shape already checked by the caller through `spec`) where its role says.
void bind(const GgufFile& f, const GgufTensor& t, const TensorSpec& spec, const ModelConfig& c,
          ModelWeights& w, LayerWeights* layer) {
    const int64_t cols = size_of(spec.cols, c), rows = size_of(spec.rows, c);
    const int64_t q_width = c.n_heads * c.head_dim, kv_width = c.n_kv_heads * c.head_dim;
    auto mat = [&] { return matrix(f, t, cols, rows); };
    auto vec = [&] { return vector(f, t, cols); };
    switch (spec.role) {
        case Role::TokenEmbd:
            w.token_embd = mat();
            return;
        case Role::OutputNorm:
            w.output_norm = vec();
            return;
        case Role::Output:
            w.output = mat();
            return;
        case Role::RopeFreqs:
            w.rope_freqs = vec();
            return;
        case Role::RopeFactorsShort:
            w.rope_factors_short = vec();
            return;
        case Role::RopeFactorsLong:
            w.rope_factors_long = vec();
            return;
        case Role::TokenTypes:
            w.token_types = mat();
            return;
        case Role::PositionEmbd:
            w.position_embd = mat();
            return;
        case Role::TokenEmbdNorm:
            w.token_embd_norm = vec();
            return;
        case Role::TokenEmbdNormBias:
            w.token_embd_norm_bias = vec();
            return;
        default:
            break;
    }
    LayerWeights& l = *layer;
    switch (spec.role) {
        case Role::AttnNorm:
            l.attn_norm = vec();
            return;
        case Role::AttnQ:
            l.wq = mat();
            return;
        case Role::AttnK:
            l.wk = mat();
            return;
        case Role::AttnV:
            l.wv = mat();
            return;
        case Role::AttnQkv: {
            const WeightMatrix qkv = mat();
            l.wq = rows_of(qkv, 0, q_width);
            l.wk = rows_of(qkv, q_width, kv_width);
            l.wv = rows_of(qkv, q_width + kv_width, kv_width);
            return;
        }
        case Role::AttnQBias:
            l.bq = vec();
            return;
        case Role::AttnKBias:
            l.bk = vec();
            return;
        case Role::AttnVBias:
            l.bv = vec();
            return;
        case Role::AttnQNorm:
            l.attn_q_norm = vec();
            return;
        case Role::AttnKNorm:
            l.attn_k_norm = vec();
            return;
        case Role::AttnOutput:
            l.wo = mat();
            return;
        case Role::AttnOutputBias:
            l.bo = vec();
            return;
        case Role::AttnPostNorm:
            l.attn_post_norm = vec();
            return;
        case Role::FfnNorm:
            l.ffn_norm = vec();
            return;
        case Role::FfnGate:
            l.w_gate = mat();
            return;
        case Role::FfnUp:
            l.w_up = mat();
            return;
        case Role::FfnUpBias:
            l.b_up = vec();
            return;
        case Role::FfnGateUp: {  // the gate's rows first, as llama.cpp splits it
            const WeightMatrix gate_up = mat();
            l.w_gate = rows_of(gate_up, 0, c.n_ff);
            l.w_up = rows_of(gate_up, c.n_ff, c.n_ff);
            return;
        }
        case Role::FfnDown:
            l.w_down = mat();
            return;
        case Role::FfnDownBias:
            l.b_down = vec();
            return;
        case Role::FfnPostNorm:
            l.ffn_post_norm = vec();
            return;
        case Role::AttnOutNorm:
            l.attn_out_norm = vec();
            return;
        case Role::AttnOutNormBias:
            l.attn_out_norm_bias = vec();
            return;
        case Role::LayerOutNorm:
            l.layer_out_norm = vec();
            return;
        case Role::LayerOutNormBias:
            l.layer_out_norm_bias = vec();
            return;
        default:
            return;
    }
}

// Binds each tensor of `specs` present in the file; a missing required one is an error.
void bind_all(const GgufFile& f, std::span<const TensorSpec> specs, const std::string& prefix,
              const ModelConfig& c, ModelWeights& w, LayerWeights* layer,
              std::unordered_set<std::string_view>& used) {
    for (const TensorSpec& spec : specs) {
        const std::string name = prefix + std::string(spec.name);
        const GgufTensor* t = f.find_tensor(name);
        if (!t) {
            if (spec.required) fail("'{}': tensor '{}' is missing", f.name(), name);
            continue;
        }
        check_type(f, *t);
        bind(f, *t, spec, c, w, layer);
        used.insert(t->name);
    }
}

}  // namespace

ModelWeights bind_weights(const GgufFile& f, const ModelConfig& c) {
    ModelWeights w;
    std::unordered_set<std::string_view> used;
    bind_all(f, c.arch->model_tensors, "", c, w, nullptr, used);
    w.layers.resize(c.n_layers);
    for (int64_t l = 0; l < c.n_layers; ++l)
        bind_all(f, c.arch->layer_tensors, fmt::format("blk.{}.", l), c, w, &w.layers[l], used);
    // An encoder has no LM head.
    if (!w.output.data && !c.arch->encoder) w.output = w.token_embd;
    for (const GgufTensor& t : f.tensors())
        if (!used.contains(t.name))
            fail("'{}': tensor '{}' is not used by architecture '{}'", f.name(), t.name,
                 c.architecture);
    return w;
}

namespace {

// Where `m` is packed as `type` instead of its own: a smaller type whose blocks its rows
// fill, with a quantizer and packed kernels on this CPU, and a conversion from m's type.
bool requantizes(const WeightMatrix& m, TensorType type) {
    const TensorTypeInfo* info = tensor_type_info(static_cast<uint32_t>(type));
    const RowConversion* to = row_conversion(type);
    return m.type != type && info != nullptr && m.cols % info->block_size == 0 && to != nullptr &&
           to->quantize != nullptr && row_conversion(m.type) != nullptr &&
           packed_kernels(type, active_isa()) != nullptr && row_bytes(type, m.cols) < m.row_bytes;
}

// Rows [r0, r1) of `source` in `type`, into `out`.
void convert_rows(const WeightMatrix& source, TensorType type, int64_t r0, int64_t r1,
                  std::vector<float>& row, std::vector<uint8_t>& out) {
    const size_t out_row = row_bytes(type, static_cast<size_t>(source.cols));
    row.resize(static_cast<size_t>(source.cols));
    out.resize(static_cast<size_t>(r1 - r0) * out_row);
    for (int64_t r = r0; r < r1; ++r) {
        dequantize_row(source.type, source.data + r * source.row_bytes, row.data(), row.size());
        quantize_row(type, row.data(), out.data() + (r - r0) * out_row, row.size());
    }
}

// Drops the file's pages of [begin, end), a range just packed, up to the huge page that
// holds `end`: the file's pages may be huge folios, and the next range's first read maps
// the whole folio again, so that one waits for the next range (or the final pass).
void drop_packed_pages(const GgufFile& f, const uint8_t* begin, const uint8_t* end) {
    const auto last = reinterpret_cast<uintptr_t>(end) / kHugePageBytes * kHugePageBytes;
    const auto first = reinterpret_cast<uintptr_t>(begin) / kHugePageBytes * kHugePageBytes;
    if (last > first) f.drop_pages(reinterpret_cast<const uint8_t*>(first), last - first);
}

// The matrices pack_matrices packs where a kernel takes their type: the layers' and the LM head
// (null data: a matrix the architecture does not have, such as BERT's gate).
template <typename Weights>
auto packable_matrices(Weights& w) {
    std::vector<decltype(&w.output)> out;
    for (auto& l : w.layers)
        for (auto* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
            if (m->data) out.push_back(m);
    if (w.output.data) out.push_back(&w.output);
    return out;
}

}  // namespace

size_t resident_weight_bytes(const GgufFile& f, const ModelWeights& w, Isa isa) {
    size_t bytes = f.file_size();
    for (const WeightMatrix* m : packable_matrices(w))
        if (const PackedKernels* k = packed_kernels(m->type, isa))
            bytes = bytes - static_cast<size_t>(m->rows) * m->row_bytes + packed_bytes(*m, *k);
    return bytes;
}

size_t resident_weight_bytes(const GgufFile& f, const ModelConfig& c) {
    return resident_weight_bytes(f, bind_weights(f, c), active_isa());
}

// Packing reads and rewrites every weight byte, most of a large model's load time, so the
// matrices are cut into ranges of groups that all the machine's cores pack at once. The
// file's copy of a packed range is not read again (but for token embedding rows of a tied
// LM head, which page back in as needed), so its pages leave the resident set as soon as the
// range is packed: the file and its packed copy are never both resident (a page a neighbouring
// range still reads simply pages back in).
void pack_matrices(const GgufFile& f, ModelWeights& w, std::optional<TensorType> requantize) {
    struct Range {
        WeightMatrix* m;
        WeightMatrix source;  // the file's rows: of another type than m's when requantized
        uint8_t* packed;
        int64_t g0, g1;
    };
    constexpr int64_t kRangeBytes = 1 << 20;  // of the file's rows: ranges of similar cost
    std::vector<Range> ranges;
    auto add = [&](WeightMatrix& m) {
        const WeightMatrix source = m;
        if (requantize && requantizes(m, *requantize)) {
            // Only the packed copy holds the new type's rows: nothing reads m.data again.
            m.type = *requantize;
            m.row_bytes = row_bytes(m.type, static_cast<size_t>(m.cols));
            m.data = nullptr;
        }
        const PackedKernels* kernels = packed_kernels(m.type, active_isa());
        if (!kernels) return;
        w.packed.push_back(allocate_packed(m, *kernels));
        m.packed = w.packed.back().get();
        m.kernels = kernels;
        const int64_t n = packed_groups(m, *kernels);
        const int64_t group_file_bytes =
            kernels->rows_per_group * static_cast<int64_t>(source.row_bytes);
        const int64_t step = std::max<int64_t>(1, kRangeBytes / group_file_bytes);
        for (int64_t g = 0; g < n; g += step)
            ranges.push_back({&m, source, w.packed.back().get(), g, std::min(n, g + step)});
    };
    for (WeightMatrix* m : packable_matrices(w)) add(*m);
    ThreadPool pool(ThreadPool::default_threads());
    pool.parallel_for(static_cast<int64_t>(ranges.size()), [&](int64_t begin, int64_t end, int) {
        std::vector<float> row;
        std::vector<uint8_t> converted;
        for (int64_t i = begin; i < end; ++i) {
            const Range& r = ranges[static_cast<size_t>(i)];
            const PackedKernels& k = *r.m->kernels;
            const int64_t r0 = r.g0 * k.rows_per_group,
                          r1 = std::min(r.g1 * k.rows_per_group, r.m->rows);
            if (r.source.type == r.m->type) {
                pack_groups(*r.m, k, r.g0, r.g1, r.packed);
            } else {
                convert_rows(r.source, r.m->type, r0, r1, row, converted);
                pack_groups_from(*r.m, k, converted.data(), r.g0, r.g1, r.packed);
            }
            drop_packed_pages(f, r.source.data + r0 * r.source.row_bytes,
                              r.source.data + r1 * r.source.row_bytes);
        }
    });
    // What the ranges' next reads paged back in of the huge pages they shared.
    for (const Range& r : ranges)
        if (r.g0 == 0) f.drop_pages(r.source.data, r.source.rows * r.source.row_bytes);
}

}  // namespace kite
