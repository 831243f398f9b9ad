#include "engine/memory_plan.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <string>

#include "core/error.h"
#include "engine/model_drafter.h"
#include "kv/kv_cache.h"

namespace kite {

namespace {

double gib(size_t bytes) {
    return static_cast<double>(bytes) / (1024.0 * 1024 * 1024);
}

// The run state of model.cpp's RunState for `tokens` batch tokens and `logits_rows` rows.
size_t run_state_bytes(const ModelConfig& c, int64_t tokens, int64_t logits_rows) {
    const auto t = static_cast<size_t>(tokens);
    const auto attn = static_cast<size_t>(c.n_heads * c.head_dim);
    const auto kv = static_cast<size_t>(c.n_kv_heads * c.head_dim);
    const auto embd = static_cast<size_t>(c.n_embd), ff = static_cast<size_t>(c.n_ff);
    const size_t floats = t * (embd + std::max(embd, attn) + attn + 2 * kv + attn + embd + 2 * ff) +
                          static_cast<size_t>(logits_rows) * static_cast<size_t>(c.n_vocab) +
                          t * std::max({embd, ff, attn});
    return floats * sizeof(float) + t * sizeof(void*);
}

}  // namespace

MemoryPlan plan_memory(const ModelConfig& model, size_t model_file_bytes,
                       const EngineConfig& config) {
    MemoryPlan p;
    p.context_length = config.context_length > 0 ? config.context_length : model.n_ctx_train;
    p.weight_bytes = model_file_bytes;
    const KvCacheShape shape{model.n_layers, model.n_kv_heads, model.head_dim};
    const size_t block_bytes = KvCache::block_bytes(shape, config.kv_type, config.block_size);
    if (config.kv_bytes > 0) {
        p.kv_blocks = static_cast<int64_t>(config.kv_bytes / std::max<size_t>(block_bytes, 1));
    } else {
        const int64_t per_seq = (p.context_length + config.block_size - 1) / config.block_size;
        p.kv_blocks = per_seq * std::max<int64_t>(config.max_sequences, 1);
    }
    p.kv_bytes = static_cast<size_t>(p.kv_blocks) * block_bytes;
    p.run_state_bytes = run_state_bytes(model, config.max_batch_tokens, config.max_batch_tokens);
    if (const Model* draft = config.speculation.draft_model) {
        // As ModelDrafter sizes them.
        const ModelConfig& d = draft->config();
        const int64_t sequences = std::max<int64_t>(config.max_sequences, 1);
        p.draft_weight_bytes = draft->file().file_size();
        p.draft_kv_blocks = draft_cache_blocks(p.kv_blocks, sequences, config.block_size,
                                               config.speculation.draft_max);
        p.draft_kv_bytes =
            static_cast<size_t>(p.draft_kv_blocks) *
            KvCache::block_bytes(draft->kv_shape(), config.kv_type, config.block_size);
        p.draft_run_state_bytes =
            run_state_bytes(d, std::max(config.max_batch_tokens, sequences), sequences);
    }
    return p;
}

size_t sequence_kv_bytes(const ModelConfig& model, const EngineConfig& config) {
    const int64_t context = config.context_length > 0 ? config.context_length : model.n_ctx_train;
    const int64_t blocks = (context + config.block_size - 1) / config.block_size;
    const KvCacheShape shape{model.n_layers, model.n_kv_heads, model.head_dim};
    return static_cast<size_t>(blocks) *
           KvCache::block_bytes(shape, config.kv_type, config.block_size);
}

int64_t sequences_that_fit(const ModelConfig& model, size_t model_file_bytes,
                           const EngineConfig& config, size_t budget) {
    EngineConfig one = config;
    one.kv_bytes = 0;
    one.max_sequences = 1;
    const MemoryPlan p = plan_memory(model, model_file_bytes, one);
    const size_t fixed = p.weight_bytes + p.run_state_bytes;
    if (budget < fixed) return 0;
    return static_cast<int64_t>((budget - fixed) / sequence_kv_bytes(model, config));
}

size_t available_memory_bytes() {
    size_t available = std::numeric_limits<size_t>::max();
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    size_t kib = 0;
    while (meminfo >> key >> kib) {
        if (key == "MemAvailable:") available = kib * 1024;
        meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    // A container's limit (cgroup v2) may be far below the machine's free memory.
    std::ifstream max_file("/sys/fs/cgroup/memory.max"),
        current_file("/sys/fs/cgroup/memory.current");
    size_t limit = 0, used = 0;
    if (max_file >> limit && current_file >> used && limit > used)
        available = std::min(available, limit - used);
    return available;
}

void check_memory_plan(const MemoryPlan& plan, const ModelConfig& model, size_t available) {
    if (model.n_ctx_train > 0 && plan.context_length > model.n_ctx_train)
        fail("a context of {} tokens exceeds the model's {} (it was trained for no more)",
             plan.context_length, model.n_ctx_train);
    const size_t needed = plan.allocated_bytes();
    if (needed <= available) return;
    const std::string draft =
        plan.draft_kv_bytes == 0
            ? std::string()
            : fmt::format(", the draft model's KV cache ({:.2f} GiB) and run state ({:.2f} GiB)",
                          gib(plan.draft_kv_bytes), gib(plan.draft_run_state_bytes));
    fail(
        "not enough memory: the KV cache ({} blocks, {:.2f} GiB) and run state ({:.2f} GiB){} "
        "need {:.2f} GiB, {:.2f} GiB is available (lower -c, --max-batch-tokens or --kv-mem)",
        plan.kv_blocks, gib(plan.kv_bytes), gib(plan.run_state_bytes), draft, gib(needed),
        gib(available));
}

}  // namespace kite
