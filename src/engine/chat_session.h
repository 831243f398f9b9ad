// A multi-turn conversation on one engine sequence. Each turn renders the whole
// conversation with the chat template, but only the text after what the KV cache already
// holds is tokenized and run: earlier turns are never recomputed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "engine/engine.h"

namespace kite {

class ChatSession {
  public:
    ChatSession(Engine& engine, const Tokenizer& tokenizer, ChatTemplate chat_template,
                std::string system_prompt = "");
    ~ChatSession();

    // Adds the user's message, generates the reply (streamed to on_text) and returns it.
    std::string send(const std::string& user_text, const GenerationParams& params,
                     const std::function<void(const std::string&)>& on_text);

    FinishReason last_finish() const { return last_finish_; }
    // Tokens run through the model for the last turn's prompt (the new part only).
    int64_t last_prompt_tokens() const { return last_prompt_tokens_; }
    const std::vector<ChatMessage>& messages() const { return messages_; }
    // Tokens of the conversation so far (all in the KV cache but the last, unless a KV
    // window evicted some: evicted_tokens()).
    int64_t context_tokens() const;
    int64_t evicted_tokens() const;

  private:
    Engine& engine_;
    const Tokenizer& tokenizer_;
    ChatTemplate template_;
    std::vector<ChatMessage> messages_;
    int64_t seq_id_ = -1;
    FinishReason last_finish_ = FinishReason::None;
    int64_t last_prompt_tokens_ = 0;
};

}  // namespace kite
