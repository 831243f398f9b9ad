// Request parsing and validation: the JSON body of POST /v1/completions or
// /v1/chat/completions into prompt token ids and GenerationParams. Every wrong type, missing
// field or out-of-range value is an ApiError (400, or 404 for an unknown model) that names
// the field; nothing here trusts the client.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template.h"
#include "engine/generation_params.h"
#include "grammar/constraint.h"
#include "tokenizer/tokenizer.h"

namespace kite::server {

// What parsing needs to know about the served model.
struct ServedModel {
    std::string id;  // the name clients use in "model"
    const Tokenizer* tokenizer = nullptr;
    const ChatTemplate* chat_template = nullptr;  // null: the model has none (no chat endpoint)
    int64_t context_length = 0;
    // What requests get unless they say (kite serve --kv-window, --kv-sinks): off, or
    // attention sinks and a sliding window, which let a request run past the context.
    KvWindow kv_window;
    // An embedding model's vector size (n_embd); 0: the model generates and cannot embed.
    int64_t embedding_size = 0;
    // Compiles output constraints (response_format, grammar, guided_*, forced tool calls);
    // null: the server refuses them.
    grammar::ConstraintCache* constraints = nullptr;
};

struct CompletionRequest {
    bool chat = false;
    std::vector<std::vector<int32_t>> prompts;  // token ids, one entry per prompt
    int n = 1;                                  // choices per prompt
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    // -1: none. Completions: `logprobs` (top tokens per position); chat: `top_logprobs`
    // when `logprobs` is true.
    int32_t logprobs = -1;
    GenerationParams params;  // max_tokens as given, or the default
    bool tool_calls = false;  // chat with tools offered: parse tool calls out of the replies
    bool seed_given = false;

    // max_tokens for one prompt: as given, else 16 (completions) or the rest of the context
    // (chat), as OpenAI-compatible servers do; with a KV window, a chat may generate a whole
    // context's worth.
    std::optional<int64_t> max_tokens;
    int64_t max_tokens_for(size_t prompt_tokens, int64_t context_length) const;
};

// Limits on what a request may ask.
inline constexpr int kMaxChoices = 16;      // n (per prompt) times prompts
inline constexpr int kMaxTopLogprobs = 20;  // logprobs / top_logprobs
inline constexpr size_t kMaxStopStrings = 8;

CompletionRequest parse_completion_request(std::string_view body, bool chat,
                                           const ServedModel& model);

// A chat request's prompt: its messages (with tools and tool_choice) through the model's chat
// template, as /v1/chat/completions runs it (and /tokenize counts it).
struct ChatPrompt {
    std::vector<int32_t> tokens;
    bool tool_calls = false;  // tools are offered: replies may call them
};
// The body must be a JSON object. Throws ApiError (400 naming the field; no template).
ChatPrompt chat_prompt(std::string_view body, const ServedModel& model,
                       bool add_generation_prompt = true);

}  // namespace kite::server
