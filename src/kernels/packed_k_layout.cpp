#include "kernels/packed_k_layout.h"

#include <cstring>
#include <type_traits>

#include "quant/blocks_k.h"
#include "quant/fp16.h"

namespace kite::packed {

namespace {

// One super-block of one row in the common form (packed_k_layout.h).
struct KRow {
    uint8_t q[256];
    int8_t scale[16];  // per sub-block
    int8_t min[16];    // per 16 values
    float d, dmin;
};

// Q4_K and Q5_K: scale and minimum per 32 values; the minimum covers two 16-value slots.
template <typename Block>
KRow scale_min_row(const Block& b) {
    KRow k{};
    for (int j = 0; j < 8; ++j) {
        const ScaleMin sm = k_scale_min(b.scales, j);
        k.scale[j] = static_cast<int8_t>(sm.scale);
        k.min[2 * j] = k.min[2 * j + 1] = static_cast<int8_t>(sm.min);
    }
    for (int i = 0; i < 256; ++i) {
        int q = (b.qs[32 * (i / 64) + i % 32] >> (4 * (i / 32 % 2))) & 0x0f;
        if constexpr (std::is_same_v<Block, BlockQ5_K>) q |= ((b.qh[i % 32] >> (i / 32)) & 1) << 4;
        k.q[i] = static_cast<uint8_t>(q);
    }
    k.d = f16_to_f32(b.d);
    k.dmin = f16_to_f32(b.dmin);
    return k;
}

// Q6_K: d * scale * (q - 32) = d * scale * q - 32 d * scale.
KRow q6_k_row(const BlockQ6_K& b) {
    KRow k{};
    for (int s = 0; s < 16; ++s) k.scale[s] = k.min[s] = b.scales[s];
    for (int i = 0; i < 256; ++i) {
        const int low = (b.ql[64 * (i / 128) + i % 64] >> (4 * (i / 64 % 2))) & 0x0f;
        const int high = (b.qh[32 * (i / 128) + i % 32] >> (2 * (i / 32 % 4))) & 3;
        k.q[i] = static_cast<uint8_t>(low | high << 4);
    }
    k.d = f16_to_f32(b.d);
    k.dmin = 32.0f * k.d;
    return k;
}

KRow k_row(TensorType t, const uint8_t* block) {
    if (t == TensorType::Q4_K) return scale_min_row(*reinterpret_cast<const BlockQ4_K*>(block));
    if (t == TensorType::Q5_K) return scale_min_row(*reinterpret_cast<const BlockQ5_K*>(block));
    return q6_k_row(*reinterpret_cast<const BlockQ6_K*>(block));
}

size_t k_block_bytes(TensorType t) {
    if (t == TensorType::Q4_K) return sizeof(BlockQ4_K);
    if (t == TensorType::Q5_K) return sizeof(BlockQ5_K);
    return sizeof(BlockQ6_K);
}

// Row r of a super-block (sb points at its packed bytes).
void pack_k_row(const KRow& k, const KLayout& l, int64_t r, uint8_t* sb) {
    const int64_t R = l.rows;
    for (int i = 0; i < 256; ++i) {
        const int quad = i / 4, byte = i % 4, q = k.q[i];
        sb[((quad / 2) * R + r) * 4 + byte] |=
            static_cast<uint8_t>((q & 0x0f) << (quad % 2 ? 4 : 0));
        if (l.high_regs) {
            const int h = quad / l.quads_per_high(), slot = quad % l.quads_per_high();
            sb[l.high_offset() + (h * R + r) * 4 + byte] |=
                static_cast<uint8_t>((q >> 4) << (slot * l.high_bits()));
        }
    }
    for (int s = 0; s < l.sub_blocks; ++s)
        sb[l.scale_offset() + s * R + r] = static_cast<uint8_t>(k.scale[s]);
    for (int t = 0; t < 16; ++t)
        sb[l.min_offset() + ((t / 2) * R + r) * 2 + t % 2] = static_cast<uint8_t>(k.min[t]);
    std::memcpy(sb + l.d_offset() + 4 * r, &k.d, 4);
    std::memcpy(sb + l.dmin_offset() + 4 * r, &k.dmin, 4);
}

}  // namespace

int64_t k_group_bytes(const WeightMatrix& w, int64_t rows) {
    return w.cols / kQK_K * k_layout(w.type, rows).super_block_bytes();
}

void pack_k_into(const WeightMatrix& w, int64_t rows, uint8_t* out) {
    const KLayout l = k_layout(w.type, rows);
    const int64_t nsb = w.cols / kQK_K;
    for (int64_t g = 0; g * rows < w.rows; ++g)
        for (int64_t r = 0; r < rows && g * rows + r < w.rows; ++r) {
            const uint8_t* row = w.data + (g * rows + r) * w.row_bytes;
            for (int64_t b = 0; b < nsb; ++b)
                pack_k_row(k_row(w.type, row + b * k_block_bytes(w.type)), l, r,
                           out + g * k_group_bytes(w, rows) + b * l.super_block_bytes());
        }
}

}  // namespace kite::packed
