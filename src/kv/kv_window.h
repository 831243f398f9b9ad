// Attention sinks and a sliding window over the KV cache (StreamingLLM, Xiao et al. 2023,
// "Efficient Streaming Language Models with Attention Sinks"): a sequence keeps its first
// `sinks` tokens and at least its last `window` tokens; the blocks between them are freed as
// it grows, so it can run on past the context.
//
// The policy works in whole blocks and is a function of a token's position only: the token
// at position m sees the sinks and the window blocks from first_window_block(m) on. A chunk
// of tokens never spans a position where that changes (tokens_until_slide), so how a
// sequence is cut into prefill chunks, decode steps or a recompute after preemption never
// changes what any of its tokens sees.
//
// Positions are those of the paper: a token's place among the cached tokens, sinks first.
// Keys keep the rotation they were written with: all RoPE positions are the cache positions
// plus the tokens evicted so far (rope_offset), which changes no q.k (RoPE is relative) and
// leaves every window key as it was. Only the sinks move: each time the window slides, their
// keys are rotated again from the blocks they were first written to (kept, never changed)
// into blocks of the sequence's own, right-aligned so that they end where the window starts.
// That is S keys per slide instead of the W of re-rotating the window (llama.cpp's context
// shift), no block another sequence shares is ever written, and rounding never accumulates
// (each copy is one rotation of the original). Storing keys before RoPE would instead rotate
// every key at every attention read.
//
// Block table of a sequence that has evicted, for the attention kernels:
//   [ceil(S / block) sink blocks, sinks at their end][window blocks, oldest first]
// with cache positions (its logical slots) from first_cached() on.
#pragma once

#include <cstdint>

namespace kite {

struct KvWindow {
    int64_t window = 0;  // W, tokens kept at the end; 0: off (the whole sequence is kept)
    int64_t sinks = 0;   // S, tokens kept at the start

    bool enabled() const { return window > 0; }
    bool operator==(const KvWindow&) const = default;

    int64_t sink_blocks(int64_t block_size) const { return (sinks + block_size - 1) / block_size; }
    // The first block of the window the token at `position` sees (its block index in the
    // sequence, as if nothing had been evicted).
    int64_t first_window_block(int64_t position, int64_t block_size) const;
    // Tokens evicted when the token at `position` runs: those after the sinks and before
    // the first window block. 0 while the window and the sinks still cover everything.
    int64_t evicted(int64_t position, int64_t block_size) const;
    // Tokens from `position` on that see what it sees: a chunk starting there may be this
    // long (huge when the window is off).
    int64_t tokens_until_slide(int64_t position, int64_t block_size) const;
    // The first position that evicts anything.
    int64_t first_slide(int64_t block_size) const;

    // With `evicted` tokens gone: the first cache position attended (where the sinks start
    // in their right-aligned blocks) and what a cache position adds for its RoPE position.
    int64_t first_cached(int64_t evicted, int64_t block_size) const;
    int64_t rope_offset(int64_t evicted, int64_t block_size) const;

    // The most blocks a sequence holds at once: before its first slide, while the sink copies
    // are allocated before the blocks they replace are freed, or later (sink sources, sink
    // copies and window blocks).
    int64_t peak_blocks(int64_t block_size) const;
};

}  // namespace kite
