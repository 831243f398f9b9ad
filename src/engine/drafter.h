// Speculative decoding's proposer: a drafter guesses the tokens that follow a sequence, the
// engine runs them through the model in one pass with a logits row per position, and the
// sampler keeps the longest prefix it agrees with (sampling/speculative_acceptance.h), so
// the output is exactly what the model alone would produce. A guess costs one extra batch
// token; a right guess saves a whole forward pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "gguf/tensor_type.h"
#include "kv/kv_type.h"

namespace kite {

class Model;
struct CalibrationTokens;

// One sequence's question to the drafter in a step.
struct DraftRequest {
    int64_t seq_id = 0;               // the same sequence keeps its id across steps
    std::span<const int32_t> tokens;  // its verified prompt and output
    int64_t max_tokens = 0;
    std::vector<int32_t>* out = nullptr;  // replaced by at most max_tokens guesses (or none)
};

class Drafter {
  public:
    virtual ~Drafter() = default;
    // Answers all of a step's requests at once, so a drafter with a model of its own can
    // run them through it as one batch.
    virtual void propose(std::span<const DraftRequest> requests) = 0;
    // The sequence ended, was cancelled or preempted: forget what is kept for it.
    virtual void release(int64_t /*seq_id*/) {}
    // KV blocks of the drafter's own cache held for sequences (0 without one).
    virtual int64_t blocks_used() const { return 0; }
    // Bytes of that cache, all of it (0 without one).
    virtual size_t cache_bytes() const { return 0; }
    // Whether the last propose() ran a model of its own over tokens verified in steps that
    // did not ask it (a new prompt, the text of a pause): work that steady drafting never
    // does, so the engine leaves that step out of what it learns steps cost.
    virtual bool caught_up() const { return false; }
};

enum class DrafterKind {
    None,   // no speculation
    Ngram,  // prompt lookup (engine/ngram_drafter.h)
    Model,  // a smaller model with the same vocabulary (engine/model_drafter.h)
};

struct SpeculationConfig {
    DrafterKind drafter = DrafterKind::None;
    // Most tokens drafted per sequence and step; the adaptive length (engine/draft_length.h)
    // stays at or below it. Callers that take no length start from default_draft_max.
    int64_t draft_max = 4;
    static constexpr int64_t kMaxDraft = 32;
    // false: every draft asks for draft_max tokens, whatever they cost or however many are
    // accepted (tests of the mechanics; measuring one length).
    bool adaptive_length = true;
    // DrafterKind::Model: the draft model, loaded by the caller and outliving the engine.
    const Model* draft_model = nullptr;
    // DrafterKind::Model: a sequence's draft ends with the first guess whose probability
    // under the draft model is below this. That guess is still verified (it costs a batch
    // row, not a draft pass), but the guesses after it would mostly be rejected, each at the
    // cost of a draft pass; 0 drafts all K.
    float draft_p_min = kDefaultDraftPMin;
    static constexpr float kDefaultDraftPMin = 0.75f;
    // DrafterKind::Model: guesses only among the first this many token ids (0: all of them).
    // BPE vocabularies number their tokens roughly by frequency, so the text's tokens are
    // nearly all among the first ones, and the draft's LM head reads only their rows.
    int64_t draft_vocab = kDefaultDraftVocab;
    static constexpr int64_t kDefaultDraftVocab = 65536;

    // Throws kite::Error when draft_max is outside 1..kMaxDraft, draft_p_min outside 0..1,
    // draft_vocab negative, or a model drafter has no model.
    void validate() const;
};

// "none", "ngram" or "draft" -> the kind; throws kite::Error for anything else.
DrafterKind parse_drafter_kind(const std::string& name);

// The draft length that measured best for a drafter of this kind.
int64_t default_draft_max(DrafterKind kind);

// What a drafter with its own KV cache sizes it from: the engine's limits.
struct DrafterContext {
    const Model* target = nullptr;
    ThreadPool* pool = nullptr;
    int64_t n_blocks = 0;  // blocks of the engine's KV cache
    int64_t block_size = 16;
    int64_t max_batch_tokens = 512;
    int64_t max_sequences = 1;
    KvTypes kv_type;  // the draft cache stores what the engine's stores
    // The calibration text in the target's tokens, which are the draft model's too
    // (engine/calibration_text.h); read only while the drafter is made.
    const CalibrationTokens* calibration = nullptr;
};

// The drafter a configuration asks for; null for DrafterKind::None. Throws kite::Error when
// the draft model cannot draft for the target (a different vocabulary).
std::unique_ptr<Drafter> make_drafter(const SpeculationConfig& config,
                                      const DrafterContext& context);

}  // namespace kite
