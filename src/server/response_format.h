// Response formatting: OpenAI-shaped JSON for completions and chat completions, whole or as
// server-sent-event chunks ("data: {...}\n\n", ending with "data: [DONE]\n\n"), with
// logprobs, finish reasons and usage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/tool_calls.h"
#include "engine/sequence.h"
#include "sampling/logprobs.h"
#include "tokenizer/tokenizer.h"

namespace kite::server {

// One generated token's log-probabilities.
struct TokenLogprob {
    int32_t token = -1;
    float logprob = 0;
    std::vector<TokenProb> top;
};

// A choice's result, accumulated for a non-streamed response.
struct ChoiceResult {
    std::string text;
    FinishReason finish = FinishReason::None;
    std::vector<TokenLogprob> logprobs;
};

struct Usage {
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;
};

// "stop" or "length" (null while running).
nlohmann::json finish_reason_json(FinishReason reason);

class ResponseFormatter {
  public:
    ResponseFormatter(bool chat, bool want_logprobs, std::string model_id,
                      const Tokenizer& tokenizer);

    // Chat with tools offered: replies are parsed for tool calls (message.tool_calls and
    // finish_reason "tool_calls"); streamed, a call's text is held back and sent as a
    // tool_calls delta at the end.
    void enable_tool_calls(size_t n_choices);

    nlohmann::json response(const std::vector<ChoiceResult>& choices, const Usage& usage) const;
    // A streamed chunk for one choice: new text, its tokens' logprobs, maybe the finish.
    // `first`: the choice's first chunk (chat: carries the role).
    nlohmann::json chunk(int index, const std::string& text, const std::vector<TokenLogprob>& lps,
                         FinishReason finish, bool first);
    // A chunk that tells the client nothing (no role, text, tool call, logprobs or finish),
    // as while a tool call's text is held back: not worth sending.
    static bool carries_nothing(const nlohmann::json& chunk);
    // The closing chunk with usage and no choices (stream_options.include_usage).
    nlohmann::json usage_chunk(const Usage& usage) const;

    // JSON text; invalid UTF-8 (a token that is part of a character) becomes U+FFFD.
    static std::string dump(const nlohmann::json& j);
    static std::string sse(const nlohmann::json& j) { return "data: " + dump(j) + "\n\n"; }
    static constexpr const char* kDone = "data: [DONE]\n\n";

  private:
    nlohmann::json envelope(const char* object) const;
    nlohmann::json logprobs_json(const std::vector<TokenLogprob>& lps, size_t text_offset) const;
    nlohmann::json usage_json(const Usage& usage) const;

    bool chat_;
    bool want_logprobs_;
    std::string id_;
    std::string model_id_;
    int64_t created_;
    const Tokenizer& tokenizer_;
    std::vector<ToolCallStream> tool_streams_;  // one per choice; empty: no tools
};

}  // namespace kite::server
