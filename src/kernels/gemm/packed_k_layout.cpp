#include "kernels/gemm/packed_k_layout.h"

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
    int8_t min[16];    // per 16 values (Q2_K, Q4_K, Q5_K; Q3_K's, Q6_K's are its scales)
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
    for (int j = 0; j < 8; ++j)  // sub-block j: nibbles 4 (j % 2) of qs[32 (j / 2) ..]
        for (int l = 0; l < 32; ++l) {
            int q = (b.qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0x0f;
            if constexpr (std::is_same_v<Block, BlockQ5_K>) q |= ((b.qh[l] >> j) & 1) << 4;
            k.q[32 * j + l] = static_cast<uint8_t>(q);
        }
    k.d = f16_to_f32(b.d);
    k.dmin = f16_to_f32(b.dmin);
    return k;
}

// Q6_K: d * scale * (q - 32) = d * scale * q - 32 d * scale.
KRow q6_k_row(const BlockQ6_K& b) {
    KRow k{};
    for (int s = 0; s < 16; ++s) k.scale[s] = b.scales[s];
    for (int j = 0; j < 8; ++j)  // 32 values each
        for (int l = 0; l < 32; ++l) {
            const int low = (b.ql[64 * (j / 4) + 32 * (j % 2) + l] >> (4 * (j / 2 % 2))) & 0x0f;
            const int high = (b.qh[32 * (j / 4) + l] >> (2 * (j % 4))) & 3;
            k.q[32 * j + l] = static_cast<uint8_t>(low | high << 4);
        }
    k.d = f16_to_f32(b.d);
    k.dmin = 32.0f * k.d;
    return k;
}

// Q2_K: a 4-bit scale and minimum per 16 values, levels 0..3.
KRow q2_k_row(const BlockQ2_K& b) {
    KRow k{};
    for (int s = 0; s < 16; ++s) {
        k.scale[s] = static_cast<int8_t>(b.scales[s] & 0x0f);
        k.min[s] = static_cast<int8_t>(b.scales[s] >> 4);
    }
    for (int i = 0; i < kQK_K; ++i)
        k.q[i] = static_cast<uint8_t>((b.qs[32 * (i / 128) + i % 32] >> (2 * (i / 32 % 4))) & 3);
    k.d = f16_to_f32(b.d);
    k.dmin = f16_to_f32(b.dmin);
    return k;
}

// Q3_K: d * scale * (q - 4) = d * scale * q - 4 d * scale, q the low 2 bits and the hmask bit
// (set: no -4) as bit 2.
KRow q3_k_row(const BlockQ3_K& b) {
    KRow k{};
    for (int s = 0; s < 16; ++s) k.scale[s] = static_cast<int8_t>(q3_k_scale(b.scales, s));
    for (int i = 0; i < kQK_K; ++i) {
        const int low = (b.qs[32 * (i / 128) + i % 32] >> (2 * (i / 32 % 4))) & 3;
        const int high = (b.hmask[i % 32] >> (i / 32)) & 1;
        k.q[i] = static_cast<uint8_t>(low | high << 2);
    }
    k.d = f16_to_f32(b.d);
    k.dmin = 4.0f * k.d;
    return k;
}

KRow k_row(TensorType t, const uint8_t* block) {
    if (t == TensorType::Q2_K) return q2_k_row(*reinterpret_cast<const BlockQ2_K*>(block));
    if (t == TensorType::Q3_K) return q3_k_row(*reinterpret_cast<const BlockQ3_K*>(block));
    if (t == TensorType::Q4_K) return scale_min_row(*reinterpret_cast<const BlockQ4_K*>(block));
    if (t == TensorType::Q5_K) return scale_min_row(*reinterpret_cast<const BlockQ5_K*>(block));
    return q6_k_row(*reinterpret_cast<const BlockQ6_K*>(block));
}

size_t k_block_bytes(TensorType t) {
    if (t == TensorType::Q2_K) return sizeof(BlockQ2_K);
    if (t == TensorType::Q3_K) return sizeof(BlockQ3_K);
    if (t == TensorType::Q4_K) return sizeof(BlockQ4_K);
    if (t == TensorType::Q5_K) return sizeof(BlockQ5_K);
    return sizeof(BlockQ6_K);
}

// The low bits of row r's levels, kPerByte quads to a byte (2: nibbles, 4: 2 bits each).
template <int kPerByte>
void pack_low_bits(const KRow& k, int64_t R, int64_t r, uint8_t* sb) {
    constexpr int kBits = 8 / kPerByte, kMask = (1 << kBits) - 1;
    for (int e = 0; e < 64 / kPerByte; ++e) {  // quads kPerByte e .. kPerByte (e + 1) - 1
        uint8_t* dst = sb + (e * R + r) * 4;
        const uint8_t* q = k.q + 4 * kPerByte * e;
        for (int byte = 0; byte < 4; ++byte) {
            int bits = 0;
            for (int slot = 0; slot < kPerByte; ++slot)
                bits |= (q[4 * slot + byte] & kMask) << (slot * kBits);
            dst[byte] = static_cast<uint8_t>(bits);
        }
    }
}

// Row r of a super-block (sb points at its packed bytes). Each packed byte is assembled from
// the row's levels and stored once: loading a model packs every weight, so this loop sets how
// long a K-quant model takes to load.
void pack_k_row(const KRow& k, const KLayout& l, int64_t r, uint8_t* sb) {
    const int64_t R = l.rows;
    if (l.low_bits == 4)
        pack_low_bits<2>(k, R, r, sb);
    else
        pack_low_bits<4>(k, R, r, sb);
    for (int64_t h = 0; h < l.high_regs; ++h) {
        uint8_t* dst = sb + l.high_offset() + (h * R + r) * 4;
        for (int byte = 0; byte < 4; ++byte) {
            int bits = 0;
            for (int slot = 0; slot < l.quads_per_high(); ++slot) {
                const int64_t quad = h * l.quads_per_high() + slot;
                bits |= (k.q[4 * quad + byte] >> l.low_bits) << (slot * l.high_bits());
            }
            dst[byte] = static_cast<uint8_t>(bits);
        }
    }
    for (int s = 0; s < l.sub_blocks; ++s)
        sb[l.scale_offset() + s * R + r] = static_cast<uint8_t>(k.scale[s]);
    for (int t = 0; t < l.stored_mins(); ++t)  // a 32-value minimum is both 16-value slots
        sb[l.min_offset() + ((t / 2) * R + r) * 2 + t % 2] =
            static_cast<uint8_t>(k.min[t * 16 / l.sub_blocks]);
    // Exact: d and dmin are the file's f16 values (Q3_K's dmin 4 d and Q6_K's 32 d are
    // power-of-two multiples).
    const uint16_t d = f32_to_f16(k.d), dmin = f32_to_f16(k.dmin);
    std::memcpy(sb + l.d_offset() + 2 * r, &d, 2);
    std::memcpy(sb + l.dmin_offset() + 2 * r, &dmin, 2);
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
