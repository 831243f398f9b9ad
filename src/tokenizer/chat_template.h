// Chat templates: turn a conversation into the prompt text a chat model was trained on.
// Kite does not run Jinja; it recognises the common template families in the GGUF's
// tokenizer.chat_template and renders them natively:
//   chatml  <|im_start|>role\ncontent<|im_end|>\n   (SmolLM2, Qwen, ...), including a
//           default system message when the template adds one
//   llama3  <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>
//   llama2  [INST] user [/INST] answer </s>   (also Mistral-style, with <<SYS>> blocks)
#pragma once

#include <span>
#include <string>

#include "gguf/gguf_file.h"

namespace kite {

struct ChatMessage {
    std::string role;  // "system", "user" or "assistant"
    std::string content;
};

class ChatTemplate {
  public:
    enum class Style { ChatML, Llama3, Llama2 };

    // Throws kite::Error when the file has no template or one Kite does not recognise.
    static ChatTemplate from_gguf(const GgufFile& file);
    // Recognises a template's source text; throws kite::Error naming what is supported.
    static ChatTemplate from_source(std::string_view source);

    Style style() const { return style_; }
    const char* name() const;
    const std::string& default_system() const { return default_system_; }

    // The prompt text for `messages`; with add_generation_prompt it ends where the
    // assistant's reply begins.
    std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt) const;

  private:
    Style style_ = Style::ChatML;
    std::string default_system_;  // chatml: system message added when none is given
};

}  // namespace kite
