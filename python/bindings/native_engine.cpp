#include "native_engine.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/normalize.h"
#include "engine/draft_vocabulary.h"
#include "engine/memory_plan.h"
#include "kv/kv_type.h"
#include "model/model_path.h"
#include "model/pooling.h"

namespace kite::python {

namespace {

// The KV cache `kite serve` sizes without --kv-mem: room for max_seqs full contexts, at most
// 1 GiB (longer requests wait or are preempted, as on the server).
constexpr size_t kDefaultKvCap = size_t{1} << 30;

// OpenAI's finish reasons, which Python callers (and vLLM's API) expect.
constexpr std::pair<FinishReason, const char*> kFinishNames[] = {
    {FinishReason::None, ""},
    {FinishReason::EndOfText, "stop"},
    {FinishReason::StopString, "stop"},
    {FinishReason::MaxTokens, "length"},
    {FinishReason::ContextFull, "length"},
    {FinishReason::NonFinite, "error"},
    {FinishReason::NoAllowedToken, "error"},
};

const char* finish_name(FinishReason reason) {
    for (const auto& [r, name] : kFinishNames)
        if (r == reason) return name;
    return "error";
}

KvTypes parse_kv_types(const std::string& name) {
    const std::optional<TensorType> t = parse_kv_type(name);
    if (!t) fail("kv_type '{}' is not one of {}", name, kv_type_names());
    return *t;
}

void check_options(const NativeOptions& o) {
    if (o.threads < 0 || o.threads > 1024) fail("threads {} is not in [0, 1024]", o.threads);
    if (o.context < 0 || o.context > (int64_t{1} << 24))
        fail("ctx {} is not in [0, 16777216]", o.context);
    if (o.max_seqs < 1 || o.max_seqs > 4096) fail("max_seqs {} is not in [1, 4096]", o.max_seqs);
}

}  // namespace

NativeEngine::NativeEngine(const NativeOptions& o) {
    check_options(o);
    const KvTypes kv = parse_kv_types(o.kv_type);
    path_ = resolve_model_path(o.model);
    model_ = Model::load(path_);
    tokenizer_ = Tokenizer::from_gguf(model_->file());
    EngineConfig c;
    c.threads = o.threads;
    c.context_length = o.context;
    c.max_sequences = o.max_seqs;
    c.kv_type = kv;
    if (!o.pooling.empty()) {
        const std::optional<Pooling> pooling = pooling_from_name(o.pooling);
        if (!pooling) fail("pooling '{}' is not mean, cls or last", o.pooling);
        c.embed_pooling = *pooling;
    }
    c.kv_bytes = std::min(sequence_kv_bytes(model_->config(), c) * static_cast<size_t>(o.max_seqs),
                          kDefaultKvCap);
    if (!o.draft_model.empty()) {
        // As the CLI's --draft-model: larger matrices become Q4_0 at load (the output is the
        // target's either way).
        draft_ = Model::load(resolve_model_path(o.draft_model), TensorType::Q4_0);
        check_same_vocabulary(model_->file(), model_->config().n_vocab, draft_->file(),
                              draft_->config().n_vocab);
        c.speculation.drafter = DrafterKind::Model;
        c.speculation.draft_max = default_draft_max(DrafterKind::Model);
        c.speculation.draft_model = draft_.get();
        c.speculation.validate();
    }
    engine_ = std::make_unique<Engine>(*model_, *tokenizer_, c);
}

void NativeEngine::check_open() const {
    if (!engine_) fail("this LLM is closed");
}

std::vector<int32_t> NativeEngine::tokenize(const std::string& text, bool add_special,
                                            bool parse_special) const {
    std::lock_guard lock(mutex_);
    check_open();
    return tokenizer_->encode(text, add_special, parse_special);
}

std::string NativeEngine::detokenize(const std::vector<int32_t>& ids) const {
    std::lock_guard lock(mutex_);
    check_open();
    const auto n = static_cast<int64_t>(tokenizer_->n_vocab());
    for (int32_t id : ids)
        if (id < 0 || id >= n) fail("token id {} is not in the vocabulary [0, {})", id, n);
    return tokenizer_->decode(ids);
}

std::vector<int32_t> NativeEngine::chat_prompt(const std::string& messages_json,
                                               const std::string& tools_json) const {
    std::lock_guard lock(mutex_);
    check_open();
    if (!template_) template_ = ChatTemplate::from_gguf(model_->file(), *tokenizer_);
    ChatRequestContext request;
    if (!tools_json.empty()) request.tools = nlohmann::ordered_json::parse(tools_json);
    const std::string prompt =
        template_->render(nlohmann::ordered_json::parse(messages_json), true, request);
    return template_->tokenize(*tokenizer_, prompt);
}

void NativeEngine::constrain(GenerationParams& params, int kind, const std::string& text) {
    std::lock_guard lock(mutex_);
    check_open();
    if (kind < 0 || kind > static_cast<int>(grammar::ConstraintKind::Choice))
        fail("unknown constraint kind {}", kind);
    if (!constraints_)
        constraints_ = std::make_unique<grammar::ConstraintCache>(
            std::make_shared<const grammar::TokenizerVocab>(grammar::tokenizer_vocab(*tokenizer_)));
    grammar::ConstraintSpec spec;
    spec.kind = static_cast<grammar::ConstraintKind>(kind);
    spec.text = text;
    params.constraint = constraints_->get(spec);
}

void NativeEngine::validate(const std::vector<int32_t>& prompt,
                            const GenerationParams& params) const {
    std::lock_guard lock(mutex_);
    check_open();
    engine_->validate(prompt, params);
}

int64_t NativeEngine::submit(const std::vector<int32_t>& prompt, const GenerationParams& params) {
    std::lock_guard lock(mutex_);
    check_open();
    return engine_->submit(prompt, params);
}

void NativeEngine::release(int64_t seq_id) {
    std::lock_guard lock(mutex_);
    if (engine_) engine_->release(seq_id);
}

bool NativeEngine::has_work() const {
    std::lock_guard lock(mutex_);
    return engine_ && engine_->has_work();
}

std::vector<NativeEvent> NativeEngine::step() {
    std::lock_guard lock(mutex_);
    check_open();
    std::vector<NativeEvent> out;
    for (const TokenEvent& ev : engine_->step()) {
        NativeEvent& e = out.emplace_back();
        e.seq_id = ev.seq_id;
        e.token = ev.token;
        e.text = ev.text;
        e.finish = finish_name(ev.finish);
        e.logprob = ev.logprob;
        for (const TokenProb& p : ev.top_logprobs) e.top_logprobs.emplace_back(p.id, p.logprob);
    }
    return out;
}

std::vector<float> NativeEngine::embed(const std::vector<std::vector<int32_t>>& inputs,
                                       int64_t dimensions) {
    check_open();
    if (!engine_->can_embed())
        fail(
            "'{}' is a generative model; LLM(..., pooling='mean' or 'last') embeds with its "
            "final hidden state",
            path_);
    if (inputs.empty()) fail("nothing to embed (no inputs)");
    const int64_t width = engine_->embedding_size();
    const int64_t dims = dimensions == 0 ? width : dimensions;
    if (dims < 1 || dims > width) fail("dimensions {} is not in [1, {}]", dimensions, width);
    const std::vector<float> pooled = engine_->embed(inputs);
    std::vector<float> out(inputs.size() * size_t(dims));
    for (size_t i = 0; i < inputs.size(); ++i) {
        float* row = &out[i * size_t(dims)];
        std::copy_n(&pooled[i * size_t(width)], dims, row);
        normalize_l2(row, dims);
    }
    return out;
}

void NativeEngine::close() {
    std::lock_guard lock(mutex_);
    engine_.reset();
    template_.reset();
    tokenizer_.reset();
    draft_.reset();
    model_.reset();
}

bool NativeEngine::closed() const {
    std::lock_guard lock(mutex_);
    return !engine_;
}

int64_t NativeEngine::n_vocab() const {
    std::lock_guard lock(mutex_);
    check_open();
    return static_cast<int64_t>(tokenizer_->n_vocab());
}

int64_t NativeEngine::context_length() const {
    std::lock_guard lock(mutex_);
    check_open();
    return engine_->context_length();
}

int NativeEngine::threads() const {
    std::lock_guard lock(mutex_);
    check_open();
    return engine_->threads();
}

}  // namespace kite::python
