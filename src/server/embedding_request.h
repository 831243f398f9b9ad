// POST /v1/embeddings in OpenAI's shape: the request's inputs (a string, a list of strings, a
// list of token ids or a list of lists of ids) as token ids, and the response body.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/request_parser.h"

namespace kite::server {

// Inputs one request may embed (OpenAI's limit).
inline constexpr size_t kMaxEmbeddingInputs = 2048;

struct EmbeddingRequest {
    std::vector<std::vector<int32_t>> inputs;  // strings tokenized with [CLS] ... [SEP]
    int64_t dimensions = 0;                    // values kept of each vector
    bool base64 = false;                       // encoding_format "base64"
    int64_t prompt_tokens = 0;
};

// Throws ApiError (400 naming the field, 404 for another model's name) for bad input:
// empty input, an empty string, an id outside the vocabulary, an input longer than the
// context, dimensions outside 1..n_embd, an unknown encoding_format, too many inputs.
EmbeddingRequest parse_embedding_request(std::string_view body, const ServedModel& model,
                                         int64_t n_embd);

// The response for `vectors` (n_embd values per input, pooled but not normalised): each
// truncated to the request's dimensions and L2-normalised, as floats or base64.
nlohmann::json embedding_response(std::vector<float>& vectors, int64_t n_embd,
                                  const EmbeddingRequest& request, const std::string& model_id);

}  // namespace kite::server
