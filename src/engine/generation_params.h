// What a caller asks of one generation: how to sample and when to stop.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/constraint.h"
#include "kv/kv_window.h"
#include "sampling/sampling_params.h"

namespace kite {

struct GenerationParams {
    SamplingParams sampling;
    int64_t max_tokens = 256;       // generated tokens, at most
    std::vector<std::string> stop;  // generation ends before any of these strings
    bool ignore_eos = false;        // keep going past end-of-generation tokens
    bool keep_cache = false;        // keep the sequence's KV cache after it finishes
    bool speculative = true;        // draft tokens when the engine has a drafter (opt-out)
    // Attention sinks and a sliding window (kv/kv_window.h): the sequence keeps its first
    // kv_window.sinks and last kv_window.window tokens and runs on past the context. Off by
    // default.
    KvWindow kv_window;
    // Log-probabilities in each TokenEvent: -1 none, 0 the sampled token's, k > 0 also the
    // k most likely tokens'. Taken after bias and penalties, before truncation/temperature.
    int32_t logprobs = -1;
    // Structured output (grammar/constraint.h): each token is sampled only among those the
    // constraint allows next, after bias and penalties, so samplers and logprobs see the
    // constrained distribution. Null: unconstrained.
    std::shared_ptr<const grammar::Constraint> constraint;
};

}  // namespace kite
