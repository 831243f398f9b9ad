// What an engine configuration costs in memory before anything is allocated: the mapped
// weights, the KV cache (the same block arithmetic as the Engine) and the run state of one
// forward pass, the draft model's too, and whether what is still to be allocated fits in the
// memory available. `kite plan` and the engine's own check share this arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/engine.h"
#include "kv/kv_window.h"
#include "model/model_config.h"

namespace kite {

struct MemoryPlan {
    int64_t context_length = 0;  // per sequence, as the engine resolves it
    int64_t kv_blocks = 0;
    size_t weight_bytes = 0;     // the mapped model file
    size_t kv_bytes = 0;         // the KV cache
    size_t run_state_bytes = 0;  // activations and logits of one forward pass
    // With a draft model (speculation.draft_model): its mapped file, its own KV cache (in the
    // engine's KV types) and its run state.
    int64_t draft_kv_blocks = 0;
    size_t draft_weight_bytes = 0, draft_kv_bytes = 0, draft_run_state_bytes = 0;

    // What the process allocates: the caches and run states (the weights are mapped).
    size_t allocated_bytes() const {
        return kv_bytes + run_state_bytes + draft_kv_bytes + draft_run_state_bytes;
    }
    size_t total_bytes() const { return weight_bytes + draft_weight_bytes + allocated_bytes(); }
};

// The bytes of model.cpp's RunState for `tokens` batch tokens and `logits_rows` logits rows.
// Its pages become resident as a step writes them: a step of T tokens and R logits rows
// touches about run_state_bytes(model, T, R) of it.
size_t run_state_bytes(const ModelConfig& model, int64_t tokens, int64_t logits_rows);

// A draft model as a plan counts it, from its file alone (`kite plan` loads no weights).
struct PlannedDraft {
    const ModelConfig* config = nullptr;  // null: no draft model
    size_t file_bytes = 0;                // its mapped file
};

// With the draft model of config.speculation.draft_model, if any.
MemoryPlan plan_memory(const ModelConfig& model, size_t model_file_bytes,
                       const EngineConfig& config);
// With `draft` as the draft model (drafting config.speculation.draft_max tokens).
MemoryPlan plan_memory(const ModelConfig& model, size_t model_file_bytes,
                       const EngineConfig& config, const PlannedDraft& draft);

// The most KV blocks one sequence holds: whole blocks of its context, or with a KV window
// the window's peak (KvWindow::peak_blocks), however long the sequence runs.
int64_t sequence_kv_blocks(const ModelConfig& model, const EngineConfig& config,
                           const KvWindow& window = {});
size_t sequence_kv_bytes(const ModelConfig& model, const EngineConfig& config,
                         const KvWindow& window = {});

// How many sequences fit in `budget` bytes: the most B whose plan (max_sequences B, the KV
// bytes of B sequences of sequence_kv_blocks each, and the draft model's cache and run state
// for B, which grow with it) totals at most `budget`; 0 when not even one does. `draft`
// defaults to config.speculation.draft_model.
int64_t sequences_that_fit(const ModelConfig& model, size_t model_file_bytes,
                           const EngineConfig& config, size_t budget, const KvWindow& window = {},
                           const PlannedDraft& draft = {});

// Bytes the process may still allocate: MemAvailable, capped by a cgroup memory limit;
// SIZE_MAX when neither can be read.
size_t available_memory_bytes();

// Throws kite::Error (naming the bytes needed and available) when the KV cache and run
// state would not fit in `available`, or the context exceeds what the model supports.
void check_memory_plan(const MemoryPlan& plan, const ModelConfig& model, size_t available);

}  // namespace kite
