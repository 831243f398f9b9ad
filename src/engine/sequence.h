// One request's life in the engine: its tokens, how many of them the KV cache holds, the
// KV blocks it holds, and why it stopped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kv/window_table.h"

namespace kite {

enum class FinishReason {
    None,            // still running
    EndOfText,       // the model produced an end-of-generation token
    StopString,      // the text reached one of the request's stop strings
    MaxTokens,       // generated the requested number of tokens
    ContextFull,     // no room left in the context window
    NonFinite,       // the logits held NaN or infinity (no token sampled): an error, not an end
    NoAllowedToken,  // the output constraint allows no token here (a dead end): an error
};

const char* finish_reason_name(FinishReason reason);
// Whether the sequence ended in an error rather than an end (its output is cut short).
inline bool is_error(FinishReason reason) {
    return reason == FinishReason::NonFinite || reason == FinishReason::NoAllowedToken;
}

struct Sequence {
    int64_t id = 0;
    std::vector<int32_t> tokens;  // prompt, then generated tokens
    int64_t n_prompt = 0;         // tokens given by the user (all turns so far)
    int64_t n_computed = 0;       // tokens whose keys/values are in the cache
    int64_t n_generated = 0;      // tokens sampled for the current turn
    // Speculative decoding: tokens a drafter proposed to follow `tokens`, verified in this
    // step's forward pass (never part of `tokens` until accepted).
    std::vector<int32_t> draft;
    std::vector<int32_t> block_table;
    // Prefix caching: hashes of the first full blocks of `tokens` (computed as needed), and
    // how many blocks of block_table have been offered to the cache.
    std::vector<uint64_t> block_hashes;
    int64_t n_published = 0;
    // Attention sinks and a sliding window (kv/kv_window.h; off by default): once it has
    // evicted, block_table starts with the sink copies and positions in the cache differ
    // from positions in `tokens` by window.rope_offset(window_state.evicted).
    KvWindow window;
    WindowState window_state;
    FinishReason finish = FinishReason::None;

    bool finished() const { return finish != FinishReason::None; }
    // Tokens still to run through the model before the next token can be sampled.
    int64_t n_pending() const { return static_cast<int64_t>(tokens.size()) - n_computed; }
    // Where the token at `position` of `tokens` sits in the block table.
    int64_t cache_position(int64_t position, int64_t block_size) const {
        return position - window.rope_offset(window_state.evicted, block_size);
    }
};

}  // namespace kite
