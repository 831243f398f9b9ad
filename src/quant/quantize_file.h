// Converting a whole GGUF model to another weight type (what `kite quantize` does): every
// weight matrix is dequantized row by row to f32 and quantized to the new type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/tensor_type.h"
#include "quant/quant_mix.h"

namespace kite {

// "q4_0", "F16", ... (any case) among the types of convert.h's table that Kite can write;
// kite::Error naming the choices for anything else.
TensorType parse_quantize_type(std::string_view name);

// llama.cpp's LLAMA_FTYPE number, stored as general.file_type, for a file mostly of `type`.
uint32_t llama_file_type(TensorType type);

// What converting a model does to one of its tensors.
struct TensorPlan {
    std::string_view name;  // points into the source file
    TensorType from = TensorType::F32;
    TensorType to = TensorType::F32;
    std::vector<uint64_t> dims;
    uint64_t bytes_before = 0;
    uint64_t bytes_after = 0;
    // The type the rule picks for this tensor; `to` differs where rows of dims[0] values do
    // not fill its blocks (then `fallback` is set).
    TensorType wanted = TensorType::F32;
    bool fallback = false;
};

// The rule (llama-quantize --pure's): tensors named "*.weight" with two or more dimensions
// (not counting trailing dimensions of 1) become `type`; where their rows do not fill its
// blocks, its narrow-rows type (convert.h: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0), or F16
// where they do not fill that one's either. 1-D tensors (norms, biases) become F32; any other
// tensor stays as it is. kite::Error if `type` cannot be written, or a tensor that must change
// has a type Kite cannot convert from.
std::vector<TensorPlan> plan_quantize(const GgufFile& file, TensorType type);

// The same with a mix (quant_mix.h): each "*.weight" matrix gets the mix's type for it, then
// the same fallback for narrow rows. kite::Error for a mixture-of-experts or Falcon model,
// whose extra rules Kite does not follow.
std::vector<TensorPlan> plan_quantize(const GgufFile& file, const QuantMix& mix);

struct QuantizeOptions {
    TensorType type = TensorType::Q8_0;
    // A mix instead of one type: `type` is then ignored.
    const QuantMix* mix = nullptr;
    unsigned n_threads = 0;  // 0: one per hardware thread
    // Called before each tensor is written: its position in the file (from 0), the count,
    // and the plan for it.
    std::function<void(size_t index, size_t count, const TensorPlan&)> on_tensor;
};

struct QuantizeResult {
    uint64_t bytes_before = 0;  // file sizes
    uint64_t bytes_after = 0;
    size_t n_tensors = 0;
    size_t n_converted = 0;  // tensors whose type changed
    size_t n_fallback = 0;   // tensors written in another type (see TensorPlan::fallback)
};

// Converts the model in `in` into `out` by the rule above, sets general.file_type and keeps
// every other metadata value byte for byte. Writes `out` + ".tmp" and renames it when
// complete, so `out` is never left half-written. kite::Error for bad input: a missing or
// corrupt file, an unsupported tensor type, `out` naming `in`, an unwritable `out`.
QuantizeResult quantize_file(const std::string& in, const std::string& out,
                             const QuantizeOptions& options);

}  // namespace kite
