#include "model/architecture.h"

#include <array>

namespace kite {

namespace {

using enum Dim;
using enum Role;

// Embedding, final norm, and an LM head that is the embedding when the file leaves it out.
constexpr TensorSpec kTiedHeadModel[] = {
    {"token_embd.weight", TokenEmbd, Embd, Vocab},
    {"output_norm.weight", OutputNorm, Embd},
    {"output.weight", Output, Embd, Vocab, false},
};

// Llama 3.x files may carry RoPE frequency factors (rope_freqs.weight).
constexpr TensorSpec kLlamaModel[] = {
    {"token_embd.weight", TokenEmbd, Embd, Vocab},
    {"output_norm.weight", OutputNorm, Embd},
    {"output.weight", Output, Embd, Vocab, false},
    {"rope_freqs.weight", RopeFreqs, RotHalf, One, false},
};

constexpr TensorSpec kLlamaLayer[] = {
    {"attn_norm.weight", AttnNorm, Embd},
    {"attn_q.weight", AttnQ, Embd, QWidth},
    {"attn_k.weight", AttnK, Embd, KvWidth},
    {"attn_v.weight", AttnV, Embd, KvWidth},
    {"attn_output.weight", AttnOutput, QWidth, Embd},
    {"ffn_norm.weight", FfnNorm, Embd},
    {"ffn_gate.weight", FfnGate, Embd, Ff},
    {"ffn_up.weight", FfnUp, Embd, Ff},
    {"ffn_down.weight", FfnDown, Ff, Embd},
};

constexpr TensorSpec kQwen2Layer[] = {
    {"attn_norm.weight", AttnNorm, Embd},    {"attn_q.weight", AttnQ, Embd, QWidth},
    {"attn_k.weight", AttnK, Embd, KvWidth}, {"attn_v.weight", AttnV, Embd, KvWidth},
    {"attn_q.bias", AttnQBias, QWidth},      {"attn_k.bias", AttnKBias, KvWidth},
    {"attn_v.bias", AttnVBias, KvWidth},     {"attn_output.weight", AttnOutput, QWidth, Embd},
    {"ffn_norm.weight", FfnNorm, Embd},      {"ffn_gate.weight", FfnGate, Embd, Ff},
    {"ffn_up.weight", FfnUp, Embd, Ff},      {"ffn_down.weight", FfnDown, Ff, Embd},
};

constexpr TensorSpec kQwen3Layer[] = {
    {"attn_norm.weight", AttnNorm, Embd},
    {"attn_q.weight", AttnQ, Embd, QWidth},
    {"attn_k.weight", AttnK, Embd, KvWidth},
    {"attn_v.weight", AttnV, Embd, KvWidth},
    {"attn_q_norm.weight", AttnQNorm, HeadDim},
    {"attn_k_norm.weight", AttnKNorm, HeadDim},
    {"attn_output.weight", AttnOutput, QWidth, Embd},
    {"ffn_norm.weight", FfnNorm, Embd},
    {"ffn_gate.weight", FfnGate, Embd, Ff},
    {"ffn_up.weight", FfnUp, Embd, Ff},
    {"ffn_down.weight", FfnDown, Ff, Embd},
};

constexpr TensorSpec kGemma3Layer[] = {
    {"attn_norm.weight", AttnNorm, Embd},
    {"attn_q.weight", AttnQ, Embd, QWidth},
    {"attn_k.weight", AttnK, Embd, KvWidth},
    {"attn_v.weight", AttnV, Embd, KvWidth},
    {"attn_q_norm.weight", AttnQNorm, HeadDim},
    {"attn_k_norm.weight", AttnKNorm, HeadDim},
    {"attn_output.weight", AttnOutput, QWidth, Embd},
    {"post_attention_norm.weight", AttnPostNorm, Embd},
    {"ffn_norm.weight", FfnNorm, Embd},
    {"ffn_gate.weight", FfnGate, Embd, Ff},
    {"ffn_up.weight", FfnUp, Embd, Ff},
    {"ffn_down.weight", FfnDown, Ff, Embd},
    {"post_ffw_norm.weight", FfnPostNorm, Embd},
};

// Phi-3 files may carry LongRoPE's two sets of frequency factors.
constexpr TensorSpec kPhi3Model[] = {
    {"token_embd.weight", TokenEmbd, Embd, Vocab},
    {"output_norm.weight", OutputNorm, Embd},
    {"output.weight", Output, Embd, Vocab, false},
    {"rope_factors_short.weight", RopeFactorsShort, RotHalf, One, false},
    {"rope_factors_long.weight", RopeFactorsLong, RotHalf, One, false},
};

constexpr TensorSpec kPhi3Layer[] = {
    {"attn_norm.weight", AttnNorm, Embd},
    {"attn_qkv.weight", AttnQkv, Embd, QkvWidth},
    {"attn_output.weight", AttnOutput, QWidth, Embd},
    {"ffn_norm.weight", FfnNorm, Embd},
    {"ffn_up.weight", FfnGateUp, Embd, Ff2},
    {"ffn_down.weight", FfnDown, Ff, Embd},
};

// nomic-embed-text: BERT with rotary positions, a fused QKV and a SwiGLU feed-forward.
constexpr TensorSpec kNomicBertModel[] = {
    {"token_embd.weight", TokenEmbd, Embd, Vocab},
    {"token_types.weight", TokenTypes, Embd, Segments},
    {"token_embd_norm.weight", TokenEmbdNorm, Embd},
    {"token_embd_norm.bias", TokenEmbdNormBias, Embd},
};

constexpr TensorSpec kNomicBertLayer[] = {
    {"attn_qkv.weight", AttnQkv, Embd, QkvWidth},
    {"attn_output.weight", AttnOutput, QWidth, Embd},
    {"attn_output_norm.weight", AttnOutNorm, Embd},
    {"attn_output_norm.bias", AttnOutNormBias, Embd},
    {"ffn_gate.weight", FfnGate, Embd, Ff},
    {"ffn_up.weight", FfnUp, Embd, Ff},
    {"ffn_down.weight", FfnDown, Ff, Embd},
    {"layer_output_norm.weight", LayerOutNorm, Embd},
    {"layer_output_norm.bias", LayerOutNormBias, Embd},
};

// BERT: learned absolute positions, separate Q/K/V, biases on every matrix (optional, as
// llama.cpp's loader has them), a GELU feed-forward without a gate.
constexpr TensorSpec kBertModel[] = {
    {"token_embd.weight", TokenEmbd, Embd, Vocab},
    {"token_types.weight", TokenTypes, Embd, Segments},
    {"position_embd.weight", PositionEmbd, Embd, Ctx},
    {"token_embd_norm.weight", TokenEmbdNorm, Embd},
    {"token_embd_norm.bias", TokenEmbdNormBias, Embd},
};

constexpr TensorSpec kBertLayer[] = {
    {"attn_q.weight", AttnQ, Embd, QWidth},
    {"attn_q.bias", AttnQBias, QWidth, One, false},
    {"attn_k.weight", AttnK, Embd, KvWidth},
    {"attn_k.bias", AttnKBias, KvWidth, One, false},
    {"attn_v.weight", AttnV, Embd, KvWidth},
    {"attn_v.bias", AttnVBias, KvWidth, One, false},
    {"attn_output.weight", AttnOutput, QWidth, Embd},
    {"attn_output.bias", AttnOutputBias, Embd, One, false},
    {"attn_output_norm.weight", AttnOutNorm, Embd},
    {"attn_output_norm.bias", AttnOutNormBias, Embd},
    {"ffn_up.weight", FfnUp, Embd, Ff},
    {"ffn_up.bias", FfnUpBias, Ff, One, false},
    {"ffn_down.weight", FfnDown, Ff, Embd},
    {"ffn_down.bias", FfnDownBias, Embd, One, false},
    {"layer_output_norm.weight", LayerOutNorm, Embd},
    {"layer_output_norm.bias", LayerOutNormBias, Embd},
};

constexpr std::array kArchitectures = {
    Architecture{"llama", kLlamaModel, kLlamaLayer, RopeStyle::Interleaved, Activation::SwiGlu,
                 false, 0},
    Architecture{"qwen2", kTiedHeadModel, kQwen2Layer, RopeStyle::Halves, Activation::SwiGlu, false,
                 0},
    Architecture{"qwen3", kTiedHeadModel, kQwen3Layer, RopeStyle::Halves, Activation::SwiGlu, false,
                 0},
    Architecture{"gemma3", kTiedHeadModel, kGemma3Layer, RopeStyle::Halves, Activation::GeGluTanh,
                 true, 6},
    // Phi-3's sliding-window key is ignored, as llama.cpp does (its files set it wrongly).
    Architecture{"phi3", kPhi3Model, kPhi3Layer, RopeStyle::Halves, Activation::SwiGlu, false, 0},
    Architecture{"nomic-bert", kNomicBertModel, kNomicBertLayer, RopeStyle::Halves,
                 Activation::SwiGlu, false, 0, true},
    // The RoPE style is unused: BERT's positions are the embedding rows it adds.
    Architecture{"bert", kBertModel, kBertLayer, RopeStyle::Halves, Activation::GeluTanh, false, 0,
                 true},
};

}  // namespace

const Architecture* find_architecture(std::string_view name) {
    for (const Architecture& a : kArchitectures)
        if (a.name == name) return &a;
    return nullptr;
}

std::string architecture_names() {
    std::string names;
    for (const Architecture& a : kArchitectures)
        names += (names.empty() ? "" : ", ") + std::string(a.name);
    return names;
}

}  // namespace kite
