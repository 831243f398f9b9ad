#include "engine/chat_session.h"

#include "core/error.h"

namespace kite {

ChatSession::ChatSession(Engine& engine, const Tokenizer& tokenizer, ChatTemplate chat_template,
                         std::string system_prompt)
    : engine_(engine), tokenizer_(tokenizer), template_(std::move(chat_template)) {
    if (!system_prompt.empty()) messages_.push_back({"system", std::move(system_prompt)});
}

ChatSession::~ChatSession() {
    if (seq_id_ >= 0) engine_.release(seq_id_);
}

int64_t ChatSession::context_tokens() const {
    return seq_id_ < 0 ? 0 : static_cast<int64_t>(engine_.sequence(seq_id_).tokens.size());
}

int64_t ChatSession::evicted_tokens() const {
    return seq_id_ < 0 ? 0 : engine_.sequence(seq_id_).window_state.evicted;
}

std::string ChatSession::send(const std::string& user_text, const GenerationParams& params,
                              const std::function<void(const std::string&)>& on_text) {
    messages_.push_back({"user", user_text});
    const std::string prompt = template_.render(messages_, true);
    GenerationParams p = params;
    p.keep_cache = true;

    // What the cache holds, as text: everything so far, special tokens written out.
    const std::string cached =
        seq_id_ >= 0 ? tokenizer_.decode(engine_.sequence(seq_id_).tokens) : "";
    if (seq_id_ >= 0 && prompt.compare(0, cached.size(), cached) == 0) {
        std::vector<int32_t> delta = tokenizer_.encode(prompt.substr(cached.size()), false, true);
        const int64_t before = engine_.sequence(seq_id_).n_computed;
        engine_.extend(seq_id_, delta, p);
        last_prompt_tokens_ =
            static_cast<int64_t>(engine_.sequence(seq_id_).tokens.size()) - before;
    } else {
        // First turn, or the template rewrote earlier text: start a fresh sequence.
        if (seq_id_ >= 0) engine_.release(seq_id_);
        std::vector<int32_t> tokens = template_.tokenize(tokenizer_, prompt);
        seq_id_ = engine_.submit(tokens, p);
        last_prompt_tokens_ = static_cast<int64_t>(tokens.size());
    }

    std::string reply;
    while (engine_.has_work())
        for (const TokenEvent& ev : engine_.step()) {
            if (ev.seq_id != seq_id_) continue;
            reply += ev.text;
            if (!ev.text.empty()) on_text(ev.text);
            last_finish_ = ev.finish;
        }
    messages_.push_back({"assistant", reply});
    return reply;
}

}  // namespace kite
