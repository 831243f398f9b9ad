// Tool calls in a model's output, parsed back into OpenAI's `tool_calls`. Models write them in
// their template's format:
//   Hermes / Qwen   <tool_call>{"name": ..., "arguments": {...}}</tool_call> (one or more)
//   Llama 3.x       {"name": ..., "parameters": {...}} as the whole reply (or after
//                   <|python_tag|>; several separated by ';')
//   Fenced JSON     ```json\n{"name": ..., "arguments": {...}}\n``` as the whole reply: small
//                   Hermes-template models (Qwen2.5-Coder 0.5B) write the call this way about as
//                   often as bare, so a near-tie in the first token must not lose the call
//   Mistral         [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...], or
//                   [TOOL_CALLS]name[ARGS]{...} in the newer tokenizers
// Text that does not parse as a call stays content.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kite::server {

struct ToolCall {
    std::string id;
    std::string name;
    std::string arguments;  // JSON text, as OpenAI sends it
};

struct ParsedReply {
    std::string content;  // the text outside the calls, trimmed
    std::vector<ToolCall> calls;
};

ParsedReply parse_tool_calls(std::string_view text);

// How a template's model writes one call, for forcing one (tool_choice "required" or a named
// tool): the call is `before` + {"name": ..., <arguments_key>: {...}} + `after`.
struct ToolCallFrame {
    std::string before;
    std::string after;
    std::string arguments_key;
};
// Read off the template's text: Hermes/Qwen tags, Mistral's [TOOL_CALLS], else the bare JSON
// object of Llama 3.x (its "parameters" when the template names them).
ToolCallFrame tool_call_frame(std::string_view template_source);

// OpenAI's message.tool_calls (stream: with an index per call, as deltas carry them).
nlohmann::json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index);

// Streams a reply that may hold tool calls: text goes out as content until something that
// may start a call appears; from there on it is held back, and finish() parses it.
class ToolCallStream {
  public:
    // The content that can be sent now.
    std::string feed(std::string_view text);
    // At the end of the reply: held-back text that was no call (content), and the calls.
    ParsedReply finish();

  private:
    std::string held_;
    bool sent_any_ = false;  // content has gone out (a Llama JSON call can only start a reply)
    bool capturing_ = false;
};

}  // namespace kite::server
