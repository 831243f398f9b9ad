// Chat templates: turn a conversation into the prompt text a chat model was trained on, by
// rendering the model's own Jinja template (tokenizer.chat_template) with the template engine,
// as transformers does. A file without a template falls back to a built-in format (ChatML,
// Llama 3 or Llama 2, written as Jinja too), and says so.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace kite {

namespace tmpl {
class Template;
}

struct ChatMessage {
    std::string role;  // "system", "user", "assistant", "tool", ...
    std::string content;
};

// Everything a template may read besides the messages (OpenAI request fields).
struct ChatRequestContext {
    nlohmann::ordered_json tools;        // null: no tools offered
    nlohmann::ordered_json tool_choice;  // null: not given
};

class ChatTemplate {
  public:
    // The file's own template; without one, the built-in ChatML (fallback() is then true).
    // bos_token/eos_token are the tokenizer's. Throws kite::Error if the template does not parse.
    static ChatTemplate from_gguf(const GgufFile& file, const Tokenizer& tokenizer);
    // `source` is Jinja text, or the name of a built-in format: chatml, llama3, llama2.
    static ChatTemplate from_source(std::string_view source, std::string bos_token,
                                    std::string eos_token, std::string origin = "given");
    // --chat-template FILE (or a built-in's name) when given, else the model's.
    static ChatTemplate resolve(const std::string& flag, const GgufFile& file,
                                const Tokenizer& tokenizer);

    // Where the template came from: "the model's", "built-in chatml", a file name.
    const std::string& origin() const { return origin_; }
    bool fallback() const { return fallback_; }
    // The Jinja text (a built-in's own text for a built-in).
    const std::string& source() const { return source_; }

    // The prompt text for `messages`; with add_generation_prompt it ends where the
    // assistant's reply begins. Throws kite::Error when the template raises.
    std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt) const;
    // The same for OpenAI-shaped messages (tool_calls, tool results, content parts) and tools.
    std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                       const ChatRequestContext& request = {}) const;

    // The rendered prompt's tokens, special tokens parsed; BOS is added only when the
    // tokenizer wants one and the template did not write it.
    std::vector<int32_t> tokenize(const Tokenizer& tokenizer, const std::string& prompt) const;

  private:
    std::shared_ptr<const tmpl::Template> template_;
    std::string bos_token_, eos_token_;
    std::string origin_;
    std::string source_;
    bool fallback_ = false;
};

// The text of a special token, or "" when the vocabulary has none.
std::string special_token_text(const Tokenizer& tokenizer, int32_t id);

}  // namespace kite
