#include "engine/memory_plan.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <string>

#include "core/error.h"
#include "engine/model_drafter.h"
#include "kernels/gemm/matmul.h"
#include "kv/kv_cache.h"

namespace kite {

namespace {

double gib(size_t bytes) {
    return static_cast<double>(bytes) / (1024.0 * 1024 * 1024);
}

KvCacheShape kv_shape(const ModelConfig& c) {
    return {c.n_layers, c.n_kv_heads, c.head_dim};
}

PlannedDraft draft_of(const EngineConfig& config) {
    const Model* draft = config.speculation.draft_model;
    return draft ? PlannedDraft{&draft->config(), draft->weight_bytes()} : PlannedDraft{};
}

}  // namespace

size_t run_state_bytes(const ModelConfig& c, int64_t tokens, int64_t logits_rows) {
    const auto t = static_cast<size_t>(tokens);
    const auto attn = static_cast<size_t>(c.n_heads * c.head_dim);
    const auto kv = static_cast<size_t>(c.n_kv_heads * c.head_dim);
    const auto embd = static_cast<size_t>(c.n_embd), ff = static_cast<size_t>(c.n_ff);
    const size_t floats = t * (embd + std::max(embd, attn) + attn + 2 * kv + attn + embd + 2 * ff) +
                          static_cast<size_t>(logits_rows) * static_cast<size_t>(c.n_vocab);
    const size_t scratch =
        matmul_scratch_bytes_any_type(static_cast<int64_t>(std::max({embd, ff, attn})), tokens);
    return floats * sizeof(float) + scratch + t * sizeof(void*);
}

MemoryPlan plan_memory(const ModelConfig& model, size_t model_file_bytes,
                       const EngineConfig& config) {
    return plan_memory(model, model_file_bytes, config, draft_of(config));
}

MemoryPlan plan_memory(const ModelConfig& model, size_t model_file_bytes,
                       const EngineConfig& config, const PlannedDraft& draft) {
    MemoryPlan p;
    p.context_length = config.context_length > 0 ? config.context_length : model.n_ctx_train;
    p.weight_bytes = model_file_bytes;
    const size_t block_bytes =
        KvCache::block_bytes(kv_shape(model), config.kv_type, config.block_size);
    if (config.kv_bytes > 0) {
        p.kv_blocks = static_cast<int64_t>(config.kv_bytes / std::max<size_t>(block_bytes, 1));
    } else {
        const int64_t per_seq = (p.context_length + config.block_size - 1) / config.block_size;
        p.kv_blocks = per_seq * std::max<int64_t>(config.max_sequences, 1);
    }
    p.kv_bytes = static_cast<size_t>(p.kv_blocks) * block_bytes;
    p.run_state_bytes = run_state_bytes(model, config.max_batch_tokens, config.max_batch_tokens);
    if (draft.config != nullptr) {
        // As ModelDrafter sizes them.
        const int64_t sequences = std::max<int64_t>(config.max_sequences, 1);
        p.draft_weight_bytes = draft.file_bytes;
        p.draft_kv_blocks = draft_cache_blocks(p.kv_blocks, sequences, config.block_size,
                                               config.speculation.draft_max);
        p.draft_kv_bytes =
            static_cast<size_t>(p.draft_kv_blocks) *
            KvCache::block_bytes(kv_shape(*draft.config), config.kv_type, config.block_size);
        p.draft_run_state_bytes =
            run_state_bytes(*draft.config, std::max(config.max_batch_tokens, sequences), sequences);
    }
    return p;
}

int64_t sequence_kv_blocks(const ModelConfig& model, const EngineConfig& config,
                           const KvWindow& window) {
    if (window.enabled()) return window.peak_blocks(config.block_size);
    const int64_t context = config.context_length > 0 ? config.context_length : model.n_ctx_train;
    return (context + config.block_size - 1) / config.block_size;
}

size_t sequence_kv_bytes(const ModelConfig& model, const EngineConfig& config,
                         const KvWindow& window) {
    return static_cast<size_t>(sequence_kv_blocks(model, config, window)) *
           KvCache::block_bytes(kv_shape(model), config.kv_type, config.block_size);
}

int64_t sequences_that_fit(const ModelConfig& model, size_t model_file_bytes,
                           const EngineConfig& config, size_t budget, const KvWindow& window,
                           const PlannedDraft& draft) {
    const PlannedDraft d = draft.config != nullptr ? draft : draft_of(config);
    const size_t per_seq = sequence_kv_bytes(model, config, window);
    const auto total = [&](int64_t sequences) {
        EngineConfig c = config;
        c.max_sequences = sequences;
        c.kv_bytes = static_cast<size_t>(sequences) * per_seq;
        return plan_memory(model, model_file_bytes, c, d).total_bytes();
    };
    // Every term grows with B, the KV cache by per_seq a sequence: what one sequence needs
    // beyond its KV bounds B from above, and a binary search finds it.
    if (budget < total(1)) return 0;
    const size_t fixed = total(1) - per_seq;
    int64_t lo = 1, hi = static_cast<int64_t>((budget - fixed) / per_seq);
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (total(mid) <= budget)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
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
