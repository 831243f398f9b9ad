#include "kernels/vec_dot.h"

#include "kernels/cpu_features.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/error.h"
#include "quant/blocks.h"
#include "quant/fp16.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kite {

ActFormat activation_format(TensorType w) {
    switch (w) {
        case TensorType::Q8_0:
        case TensorType::Q4_0:
            return ActFormat::Q8_0;
        case TensorType::Q4_1:
            return ActFormat::Q8_1;
        case TensorType::BF16:
            return ActFormat::BF16;
        default:
            return ActFormat::F32;
    }
}

size_t activation_row_bytes(ActFormat f, size_t n) {
    switch (f) {
        case ActFormat::Q8_0:
            return n / kQK * sizeof(BlockQ8_0);
        case ActFormat::Q8_1:
            return n / kQK * sizeof(BlockQ8_1);
        case ActFormat::BF16:
            return n * sizeof(uint16_t);
        case ActFormat::F32:
            break;
    }
    return n * sizeof(float);
}

namespace {

// Activations are quantized as llama.cpp's SIMD code does at run time (not as its reference
// weight quantizer): scale by 127 / amax and round half to even. The two differ in the last
// bit often enough to move logits, and matching it keeps our logits next to llama.cpp's.
template <typename Block>
void quantize_activation(const float* x, Block* y, size_t n) {
    for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
        float amax = 0.0f;
        for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        int sum = 0;
        for (int j = 0; j < kQK; ++j) {
            y[b].qs[j] = static_cast<int8_t>(std::nearbyint(x[j] * id));
            sum += y[b].qs[j];
        }
        y[b].d = f32_to_f16(d);
        if constexpr (std::is_same_v<Block, BlockQ8_1>)
            y[b].s = f32_to_f16(d * static_cast<float>(sum));
    }
}

}  // namespace

void prepare_activation(ActFormat f, const float* x, void* dst, size_t n) {
    switch (f) {
        case ActFormat::Q8_0:
            quantize_activation(x, static_cast<BlockQ8_0*>(dst), n);
            return;
        case ActFormat::Q8_1:
            quantize_activation(x, static_cast<BlockQ8_1*>(dst), n);
            return;
        case ActFormat::BF16:
            std::transform(x, x + n, static_cast<uint16_t*>(dst), f32_to_bf16);
            return;
        case ActFormat::F32:
            std::copy(x, x + n, static_cast<float*>(dst));
            return;
    }
}

namespace {

// ---- scalar references ----

float dot_f32_ref(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const float*>(w);
    auto* y = static_cast<const float*>(a);
    float sum = 0;
    for (size_t i = 0; i < n; ++i) sum += x[i] * y[i];
    return sum;
}

float dot_f16_ref(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const uint16_t*>(w);
    auto* y = static_cast<const float*>(a);
    float sum = 0;
    for (size_t i = 0; i < n; ++i) sum += f16_to_f32(x[i]) * y[i];
    return sum;
}

float dot_bf16_ref(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const uint16_t*>(w);
    auto* y = static_cast<const uint16_t*>(a);
    float sum = 0;
    for (size_t i = 0; i < n; ++i) sum += bf16_to_f32(x[i]) * bf16_to_f32(y[i]);
    return sum;
}

float dot_q8_0_ref(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ8_0*>(w);
    auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0;
    for (size_t b = 0; b < n / kQK; ++b) {
        int isum = 0;
        for (int j = 0; j < kQK; ++j) isum += x[b].qs[j] * y[b].qs[j];
        sum += f16_to_f32(x[b].d) * f16_to_f32(y[b].d) * static_cast<float>(isum);
    }
    return sum;
}

float dot_q4_0_ref(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ4_0*>(w);
    auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0;
    for (size_t b = 0; b < n / kQK; ++b) {
        int isum = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            isum += ((x[b].qs[j] & 0x0f) - 8) * y[b].qs[j];
            isum += ((x[b].qs[j] >> 4) - 8) * y[b].qs[j + kQK / 2];
        }
        sum += f16_to_f32(x[b].d) * f16_to_f32(y[b].d) * static_cast<float>(isum);
    }
    return sum;
}

// sum_j (d_w q_j + m_w) * d_a a_j = d_w d_a sum(q_j a_j) + m_w * s_a.
float dot_q4_1_ref(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ4_1*>(w);
    auto* y = static_cast<const BlockQ8_1*>(a);
    float sum = 0;
    for (size_t b = 0; b < n / kQK; ++b) {
        int isum = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            isum += (x[b].qs[j] & 0x0f) * y[b].qs[j];
            isum += (x[b].qs[j] >> 4) * y[b].qs[j + kQK / 2];
        }
        sum += f16_to_f32(x[b].d) * f16_to_f32(y[b].d) * static_cast<float>(isum) +
               f16_to_f32(x[b].m) * f16_to_f32(y[b].s);
    }
    return sum;
}

// ---- AVX2 + FMA + F16C ----
#if defined(__x86_64__)
#define KITE_AVX2 __attribute__((target("avx2,fma,f16c")))

// F16C converts in one instruction; the portable f16_to_f32 branches on the exponent.
KITE_AVX2 inline float h2f(uint16_t h) {
    return _cvtsh_ss(h);
}

KITE_AVX2 inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Sum of 32 products of signed bytes, as 8 int32 lanes turned float.
KITE_AVX2 inline __m256 mul_sum_i8(__m256i x, __m256i y) {
    const __m256i ax = _mm256_sign_epi8(x, x);  // |x|, and y takes x's sign: maddubs needs u8
    const __m256i sy = _mm256_sign_epi8(y, x);
    const __m256i dot16 = _mm256_maddubs_epi16(ax, sy);
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(dot16, _mm256_set1_epi16(1)));
}

// 32 nibbles of a Q4 block as bytes 0..15, in weight order (low nibbles first).
KITE_AVX2 inline __m256i unpack_nibbles(const uint8_t* qs) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(b, 4), b);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

KITE_AVX2 float dot_f32_avx2(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const float*>(w);
    auto* y = static_cast<const float*>(a);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), acc1);
    }
    float sum = hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; ++i) sum += x[i] * y[i];
    return sum;
}

KITE_AVX2 float dot_f16_avx2(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const uint16_t*>(w);
    auto* y = static_cast<const float*>(a);
    __m256 acc = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 xf = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
        acc = _mm256_fmadd_ps(xf, _mm256_loadu_ps(y + i), acc);
    }
    float sum = hsum(acc);
    for (; i < n; ++i) sum += f16_to_f32(x[i]) * y[i];
    return sum;
}

KITE_AVX2 inline __m256 load_bf16x8(const uint16_t* p) {
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

KITE_AVX2 float dot_bf16_avx2(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const uint16_t*>(w);
    auto* y = static_cast<const uint16_t*>(a);
    __m256 acc = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(load_bf16x8(x + i), load_bf16x8(y + i), acc);
    float sum = hsum(acc);
    for (; i < n; ++i) sum += bf16_to_f32(x[i]) * bf16_to_f32(y[i]);
    return sum;
}

KITE_AVX2 float dot_q8_0_avx2(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ8_0*>(w);
    auto* y = static_cast<const BlockQ8_0*>(a);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < n / kQK; ++b) {
        const __m256 d = _mm256_set1_ps(h2f(x[b].d) * h2f(y[b].d));
        const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
        const __m256i qy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs));
        acc = _mm256_fmadd_ps(d, mul_sum_i8(qx, qy), acc);
    }
    return hsum(acc);
}

KITE_AVX2 float dot_q4_0_avx2(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ4_0*>(w);
    auto* y = static_cast<const BlockQ8_0*>(a);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < n / kQK; ++b) {
        const __m256 d = _mm256_set1_ps(h2f(x[b].d) * h2f(y[b].d));
        const __m256i qx = _mm256_sub_epi8(unpack_nibbles(x[b].qs), _mm256_set1_epi8(8));
        const __m256i qy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs));
        acc = _mm256_fmadd_ps(d, mul_sum_i8(qx, qy), acc);
    }
    return hsum(acc);
}

KITE_AVX2 float dot_q4_1_avx2(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ4_1*>(w);
    auto* y = static_cast<const BlockQ8_1*>(a);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0;
    for (size_t b = 0; b < n / kQK; ++b) {
        const __m256 d = _mm256_set1_ps(h2f(x[b].d) * h2f(y[b].d));
        const __m256i qx = unpack_nibbles(x[b].qs);  // unsigned, as maddubs wants
        const __m256i qy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs));
        const __m256i dot16 = _mm256_maddubs_epi16(qx, qy);
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(dot16, _mm256_set1_epi16(1)));
        acc = _mm256_fmadd_ps(d, dot, acc);
        mins += h2f(x[b].m) * h2f(y[b].s);
    }
    return hsum(acc) + mins;
}

bool has_avx2() {
    return cpu_features().avx2 && cpu_features().f16c;
}
#else
bool has_avx2() {
    return false;
}
#endif

}  // namespace

DotFn dot_reference(TensorType w) {
    switch (w) {
        case TensorType::F32:
            return dot_f32_ref;
        case TensorType::F16:
            return dot_f16_ref;
        case TensorType::BF16:
            return dot_bf16_ref;
        case TensorType::Q8_0:
            return dot_q8_0_ref;
        case TensorType::Q4_0:
            return dot_q4_0_ref;
        case TensorType::Q4_1:
            return dot_q4_1_ref;
        default:
            fail("no dot product for weight type {}", tensor_type_name(w));
    }
}

DotFn dot_fast(TensorType w) {
#if defined(__x86_64__)
    if (has_avx2()) {
        switch (w) {
            case TensorType::F32:
                return dot_f32_avx2;
            case TensorType::F16:
                return dot_f16_avx2;
            case TensorType::BF16:
                return dot_bf16_avx2;
            case TensorType::Q8_0:
                return dot_q8_0_avx2;
            case TensorType::Q4_0:
                return dot_q4_0_avx2;
            case TensorType::Q4_1:
                return dot_q4_1_avx2;
            default:
                break;
        }
    }
#endif
    return dot_reference(w);
}

const char* dot_isa() {
    return has_avx2() ? "avx2" : "scalar";
}

}  // namespace kite
