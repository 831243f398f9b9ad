// What a caller asks of one generation: how to sample and when to stop.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sampling/sampling_params.h"

namespace kite {

struct GenerationParams {
    SamplingParams sampling;
    int64_t max_tokens = 256;       // generated tokens, at most
    std::vector<std::string> stop;  // generation ends before any of these strings
    bool ignore_eos = false;        // keep going past end-of-generation tokens
    bool keep_cache = false;        // keep the sequence's KV cache after it finishes
};

}  // namespace kite
