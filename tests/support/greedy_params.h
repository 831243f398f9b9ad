// Greedy generation of exactly n tokens (end-of-text ignored): what the engine tests compare
// between solo, batched and speculative runs.
#pragma once

#include <cstdint>

#include "engine/generation_params.h"

namespace kite::test {

inline GenerationParams greedy_params(int64_t n) {
    GenerationParams p;
    p.sampling.temperature = 0;
    p.max_tokens = n;
    p.ignore_eos = true;
    return p;
}

}  // namespace kite::test
