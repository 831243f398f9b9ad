// What an engine configuration costs in memory before anything is allocated: the mapped
// weights, the KV cache (the same block arithmetic as the Engine) and the run state of one
// forward pass, and whether what is still to be allocated fits in the memory available.
// `kite plan` and the engine's own check share this arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/engine.h"
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

MemoryPlan plan_memory(const ModelConfig& model, size_t model_file_bytes,
                       const EngineConfig& config);

// The KV bytes one sequence of the plan's context takes: whole blocks, as the engine sizes it.
size_t sequence_kv_bytes(const ModelConfig& model, const EngineConfig& config);

// How many sequences of the context fit in `budget` bytes beside the weights and the run
// state of one forward pass (the plan of max_sequences 1): 0 when not even one does.
int64_t sequences_that_fit(const ModelConfig& model, size_t model_file_bytes,
                           const EngineConfig& config, size_t budget);

// Bytes the process may still allocate: MemAvailable, capped by a cgroup memory limit;
// SIZE_MAX when neither can be read.
size_t available_memory_bytes();

// Throws kite::Error (naming the bytes needed and available) when the KV cache and run
// state would not fit in `available`, or the context exceeds what the model supports.
void check_memory_plan(const MemoryPlan& plan, const ModelConfig& model, size_t available);

}  // namespace kite
