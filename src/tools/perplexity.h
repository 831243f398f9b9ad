// Perplexity as llama.cpp's perplexity tool defines it, so the numbers compare: the text is
// cut into non-overlapping windows of n_ctx tokens, each evaluated from an empty cache, and
// only the second half of each window is scored (those tokens see at least n_ctx/2 of context).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/thread_pool.h"
#include "kv/kv_window.h"
#include "model/key_calibration_run.h"
#include "model/model.h"

namespace kite {

struct PerplexityOptions {
    int64_t n_ctx = 512;
    int64_t n_batch = 512;  // tokens per forward pass within a window
    int32_t bos = -1;       // if >= 0, each window's first token is replaced by it
    KvTypes kv_type;
    // The calibration text in this model's tokens (engine/calibration_text.h), for key types
    // that take a calibration (model/key_calibration_run.h).
    CalibrationTokens calibration_tokens;
    int64_t max_windows = -1;  // score only the first windows of the text (< 0: all)
};

struct PerplexityResult {
    double ppl = 0;
    double ppl_error = 0;  // PPL * standard error of the mean negative log-likelihood
    int64_t n_windows = 0;
    int64_t n_scored = 0;
    std::vector<int32_t> argmax;  // per window position j < n_ctx - 1: argmax of logits at j
};

// `tokens` is the text as llama.cpp's tool tokenizes it: BOS first where the model adds one
// (and `bos` set), so that window w holds tokens [w n_ctx, (w + 1) n_ctx) of that sequence.
// `progress(window, running_ppl)` is called after each window. Throws kite::Error when the
// text is shorter than one window.
PerplexityResult perplexity(const Model& model, const std::vector<int32_t>& tokens,
                            const PerplexityOptions& options, ThreadPool& pool,
                            const std::function<void(int64_t, double)>& progress = {});

// The text read as one stream instead (StreamingLLM's measure): every token after the first
// is scored given what the cache keeps of all before it, the whole text (window off; it
// must then fit in `context`) or attention sinks and a sliding window (kv/kv_window.h),
// evicting as the engine does, with chunks that stop where the window slides.
struct StreamPerplexityOptions {
    KvWindow window;
    int64_t context = 0;  // the positions the cache may hold; 0: the model's training context
    int64_t n_batch = 512;
    int32_t bos = -1;  // if >= 0, the first token is replaced by it
    KvTypes kv_type;
    CalibrationTokens calibration_tokens;  // as PerplexityOptions'
};

struct StreamPerplexityResult {
    double ppl = 0;
    double ppl_error = 0;
    int64_t n_scored = 0;
    int64_t n_evicted = 0;  // tokens evicted by the end
};

// `progress(tokens_scored, running_ppl)` is called after each forward pass. Throws
// kite::Error for a text of fewer than 2 tokens, or one or a window that does not fit.
StreamPerplexityResult stream_perplexity(const Model& model, const std::vector<int32_t>& tokens,
                                         const StreamPerplexityOptions& options, ThreadPool& pool,
                                         const std::function<void(int64_t, double)>& progress = {});

}  // namespace kite
