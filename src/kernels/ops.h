// Element-wise and row-wise operations of the transformer block.
#pragma once

#include <cstdint>

namespace kite {

// out = x / sqrt(mean(x^2) + eps) * weight, over a row of n.
void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps);

enum class RopeStyle {
    Interleaved,  // rotates pairs (x[2i], x[2i+1]): llama-family GGUF files
    Halves,       // rotates pairs (x[i], x[i + n/2]): GPT-NeoX / Qwen style
};

// Rotary position embedding of one head vector at `position`, in place. The angle of pair i
// is position * base^(-2i/n_rot), computed as a running product like ggml does, so the
// rounding matches llama.cpp's.
void rope(float* head, int64_t n_rot, int64_t position, float freq_base, RopeStyle style);

// gate[i] = silu(gate[i]) * up[i]: the SwiGLU feed-forward activation.
void swiglu(float* gate, const float* up, int64_t n);

// dst[i] = f16(src[i]), rounding to nearest even (F16C from the AVX2 level up).
void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n);

// x[i] += y[i]
void add_in_place(float* x, const float* y, int64_t n);

}  // namespace kite
