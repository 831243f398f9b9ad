// Element-wise and row-wise operations of the transformer block.
#pragma once

#include <cstdint>

namespace kite {

// out = x / sqrt(mean(x^2) + eps) * weight, over a row of n.
void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps);

// out = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias, over a row of n (BERT's LayerNorm).
void layer_norm(const float* x, const float* weight, const float* bias, float* out, int64_t n,
                float eps);

enum class RopeStyle {
    Interleaved,  // rotates pairs (x[2i], x[2i+1]): llama-family GGUF files
    Halves,       // rotates pairs (x[i], x[i + n/2]): GPT-NeoX / Qwen style
};

// The most dimensions RoPE rotates (a head's width at most).
constexpr int64_t kMaxRopeDims = 256;

// How positions turn into rotation angles. Pair i turns by
// theta_i = position * freq_base^(-2i/n_rot) / freq_factors[i], then scaled as below; cos and
// sin are multiplied by attn_factor.
struct RopeParams {
    RopeStyle style = RopeStyle::Interleaved;
    int64_t n_rot = 0;
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;  // linear scaling (1 / rope.scaling.factor) multiplies the angle
    // YaRN: pairs below corr_low keep the unscaled angle, above corr_high the scaled one, a
    // linear ramp between; the magnitude grows by 1 + 0.1 ln(1 / freq_scale). 0: plain scaling.
    float ext_factor = 0.0f;
    float corr_low = 0.0f, corr_high = 0.0f;
    float attn_factor = 1.0f;
    const float* freq_factors = nullptr;  // n_rot / 2 divisors (Llama 3, LongRoPE), or none
};

// cos_sin[2i] = cos, cos_sin[2i + 1] = sin of pair i's angle at `position` (n_rot values). The
// angles are a running product like ggml's, so the rounding matches llama.cpp's.
void rope_angles(const RopeParams& p, int64_t position, float* cos_sin);

// The angles that turn a vector rotated at position p into one rotated at p + delta: those of
// rope_angles at `delta` without the magnitude (attn_factor, YaRN's), which the vector got
// when it was first rotated. Exact in real arithmetic because every angle is linear in the
// position (all the scalings above keep it so).
void rope_shift_angles(const RopeParams& p, int64_t delta, float* cos_sin);

// Rotates the first n_rot values of one head vector in place by the angles of rope_angles.
void rope_rotate(float* head, const float* cos_sin, int64_t n_rot, RopeStyle style);

// Plain RoPE of one head (no scaling): rope_angles then rope_rotate.
void rope(float* head, int64_t n_rot, int64_t position, float freq_base, RopeStyle style);

// gate[i] = silu(gate[i]) * up[i]: the SwiGLU feed-forward activation.
void swiglu(float* gate, const float* up, int64_t n);

// gate[i] = gelu(gate[i]) * up[i] with GELU's tanh approximation
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): the GeGLU activation of Gemma.
void geglu_tanh(float* gate, const float* up, int64_t n);

// x[i] = gelu(x[i]), the same tanh approximation: BERT's feed-forward activation.
void gelu_tanh(float* x, int64_t n);

// dst[i] = f16(src[i]), rounding to nearest even (F16C from the AVX2 level up).
void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n);

// x[i] += y[i]
void add_in_place(float* x, const float* y, int64_t n);

}  // namespace kite
