#include "kernels/gemm/packed_layout.h"

#include <cstring>

#include "kernels/gemm/packed_k_layout.h"
#include "quant/blocks.h"
#include "quant/blocks_iq4.h"
#include "quant/blocks_q5.h"

namespace kite::packed {

namespace {

int64_t element_bytes(TensorType t) {
    return t == TensorType::F32 ? 4 : 2;
}

// The stored value j of a block of type T (packed_layout.h): Q8_0's weight, the others' level.
template <TensorType T, typename Block>
int stored_value(const Block& b, int j) {
    if constexpr (T == TensorType::Q8_0) {
        return b.qs[j];
    } else if constexpr (T == TensorType::IQ4_NL) {
        return kIq4Levels[j < 16 ? b.qs[j] & 0x0f : b.qs[j - 16] >> 4];
    } else if constexpr (has_fifth_bit(T)) {
        return q5_value(b, j);
    } else {
        return j < 16 ? b.qs[j] & 0x0f : b.qs[j - 16] >> 4;
    }
}

template <TensorType T, typename Block>
void pack_quant_row(const Block* src, int64_t nb, const QuantLayout& l,
                    const GroupParts<uint8_t>& p, int64_t r) {
    const int64_t R = l.rows;
    for (int64_t b = 0; b < nb; ++b) {
        const Block& blk = src[b];
        p.d(b)[r] = blk.d;
        if constexpr (has_min(T)) p.m(b)[r] = blk.m;
        uint8_t* q = p.q(b);
        for (int j = 0; j < kQK; ++j) {
            const int quad = j / 4, i = j % 4, v = stored_value<T>(blk, j);
            if constexpr (packs_as_q8_0(T)) {
                q[(quad * R + r) * 4 + i] = static_cast<uint8_t>(v);
            } else {
                q[((quad / 2) * R + r) * 4 + i] |=
                    static_cast<uint8_t>((v & 0x0f) << (quad % 2 ? 4 : 0));
                if constexpr (has_fifth_bit(T))
                    q[16 * R + r * 4 + i] |= static_cast<uint8_t>((v >> 4) << quad);
            }
        }
    }
}

template <TensorType T, typename Block>
void pack_quant(const WeightMatrix& w, int64_t rows, uint8_t* out) {
    const int64_t nb = w.cols / kQK;
    const QuantLayout l = quant_layout(T, rows);
    for (int64_t g = 0; g < n_groups(w, rows); ++g) {
        const GroupParts<uint8_t> p{out + g * group_bytes(w, rows), l};
        for (int64_t r = 0; r < rows && g * rows + r < w.rows; ++r)
            pack_quant_row<T>(reinterpret_cast<const Block*>(w.data + (g * rows + r) * w.row_bytes),
                              nb, l, p, r);
    }
}

void pack_float(const WeightMatrix& w, int64_t rows, uint8_t* out) {
    const int64_t es = element_bytes(w.type);
    for (int64_t g = 0; g < n_groups(w, rows); ++g) {
        uint8_t* group = out + g * group_bytes(w, rows);
        for (int64_t r = 0; r < rows && g * rows + r < w.rows; ++r) {
            const uint8_t* row = w.data + (g * rows + r) * w.row_bytes;
            for (int64_t k = 0; k < w.cols; ++k)
                std::memcpy(group + (k * rows + r) * es, row + k * es, es);
        }
    }
}

// Per group, per column pair: row r's two bf16 values at bytes 4r..4r+3.
void pack_bf16(const WeightMatrix& w, int64_t rows, uint8_t* out) {
    for (int64_t g = 0; g < n_groups(w, rows); ++g) {
        uint8_t* group = out + g * group_bytes(w, rows);
        for (int64_t r = 0; r < rows && g * rows + r < w.rows; ++r) {
            const uint8_t* row = w.data + (g * rows + r) * w.row_bytes;
            for (int64_t k = 0; k < w.cols; ++k)
                std::memcpy(group + ((k / 2) * rows + r) * 4 + (k % 2) * 2, row + 2 * k, 2);
        }
    }
}

}  // namespace

int64_t group_bytes(const WeightMatrix& w, int64_t rows) {
    if (is_k_quant(w.type)) return k_group_bytes(w, rows);
    if (w.type == TensorType::BF16) return bf16_pairs(w.cols) * rows * 4;
    if (is_float(w.type)) return w.cols * rows * element_bytes(w.type);
    return w.cols / kQK * quant_layout(w.type, rows).block_bytes();
}

void pack_into(const WeightMatrix& w, int64_t rows, uint8_t* out) {
    if (is_k_quant(w.type)) return pack_k_into(w, rows, out);
    switch (w.type) {
        case TensorType::Q8_0:
            return pack_quant<TensorType::Q8_0, BlockQ8_0>(w, rows, out);
        case TensorType::Q4_0:
            return pack_quant<TensorType::Q4_0, BlockQ4_0>(w, rows, out);
        case TensorType::Q4_1:
            return pack_quant<TensorType::Q4_1, BlockQ4_1>(w, rows, out);
        case TensorType::Q5_0:
            return pack_quant<TensorType::Q5_0, BlockQ5_0>(w, rows, out);
        case TensorType::Q5_1:
            return pack_quant<TensorType::Q5_1, BlockQ5_1>(w, rows, out);
        case TensorType::IQ4_NL:
            return pack_quant<TensorType::IQ4_NL, BlockIQ4_NL>(w, rows, out);
        case TensorType::BF16:
            return pack_bf16(w, rows, out);
        default:
            return pack_float(w, rows, out);
    }
}

}  // namespace kite::packed
