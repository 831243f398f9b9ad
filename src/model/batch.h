// One forward pass's input: the new tokens of one or more sequences, concatenated (a ragged
// batch). Prefill, decode and mixed steps are all this shape.
#pragma once

#include <cstdint>
#include <vector>

namespace kite {

struct BatchSequence {
    int64_t query_start = 0;  // index of its first token in Batch::tokens
    int64_t query_len = 0;    // new tokens this step (1 for a decode)
    int64_t context_len = 0;  // tokens in the cache after this step, the new ones included
    const int32_t* block_table = nullptr;  // logical block -> physical KV block
    // A KV window that has evicted (kv/kv_window.h): the first cache position its tokens
    // attend, and what RoPE adds to their positions (the tokens evicted), so that the keys
    // kept keep the rotation they were written with.
    int64_t first = 0;
    int64_t rope_offset = 0;
};

struct Batch {
    std::vector<int32_t> tokens;
    // Per token: its position in its sequence's cache (its slot in the block table); the
    // position in the sequence too, unless a KV window evicted tokens before it.
    std::vector<int64_t> positions;
    std::vector<int64_t> slots;  // per token: KV-cache slot its key/value goes to
    std::vector<BatchSequence> sequences;
    // Tokens whose next-token logits are wanted, in batch order: usually the last token of
    // each sequence; a speculating sequence wants its pending token and every draft token.
    std::vector<int64_t> logits_rows;
    // Logits only for token ids below this (0: the whole vocabulary), the first rows of the
    // output matrix: a draft model's pass that guesses only among the most frequent tokens.
    int64_t logits_vocab = 0;

    void clear() {
        tokens.clear(), positions.clear(), slots.clear(), sequences.clear(), logits_rows.clear();
    }
};

}  // namespace kite
