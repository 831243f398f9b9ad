// POST /tokenize and POST /detokenize, in llama-server's and vLLM's shapes: a text (llama's
// `content`, vLLM's `prompt`) or a chat request's `messages` (through the chat template, as
// /v1/chat/completions would run it: a chat prompt's tokens counted without generating)
// become token ids; ids become text. Every bad field is an ApiError (400) naming it.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "server/request_parser.h"

namespace kite::server {

// {"content" | "prompt": text, "add_special": true, "parse_special": true,
//  "with_pieces": false} or {"messages": [...], "tools", "tool_choice",
//  "add_generation_prompt": true} -> {"tokens": [id, ...] or, with pieces,
//  [{"id", "piece"}, ...], "count", "max_model_len"}. A piece that is not valid UTF-8 on its
// own (part of a character) is its bytes, as llama-server gives it.
nlohmann::json tokenize_response(std::string_view body, const ServedModel& model);

// {"tokens": [id, ...]} -> {"content": text}.
nlohmann::json detokenize_response(std::string_view body, const ServedModel& model);

}  // namespace kite::server
