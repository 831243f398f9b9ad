#include "server/token_routes.h"

#include "core/utf8.h"
#include "server/api_error.h"

namespace kite::server {

using nlohmann::json;

namespace {

json parse_object(std::string_view text) {
    json body = json::parse(text, nullptr, false);
    if (body.is_discarded()) bad_request("", "the request body is not valid JSON");
    if (!body.is_object()) bad_request("", "the request body must be a JSON object");
    return body;
}

bool flag(const json& body, const char* name, bool fallback) {
    const auto it = body.find(name);
    if (it == body.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) bad_request(name, "'{}' must be true or false", name);
    return it->get<bool>();
}

bool has(const json& body, const char* name) {
    const auto it = body.find(name);
    return it != body.end() && !it->is_null();
}

// The one input of a tokenize request: "content", "prompt" or "messages".
const char* input_field(const json& body) {
    const char* found = nullptr;
    for (const char* name : {"content", "prompt", "messages"}) {
        if (!has(body, name)) continue;
        if (found) bad_request(name, "give one of 'content', 'prompt' or 'messages', not both");
        found = name;
    }
    if (!found) bad_request("content", "'content' (or 'prompt' or 'messages') is required");
    return found;
}

std::vector<int32_t> tokens_of(std::string_view text, const json& body, const char* input,
                               const ServedModel& model) {
    if (std::string_view(input) == "messages")
        return chat_prompt(text, model, flag(body, "add_generation_prompt", true)).tokens;
    const json& v = body[input];
    if (!v.is_string()) bad_request(input, "'{}' must be a string", input);
    return model.tokenizer->encode(v.get<std::string>(), flag(body, "add_special", true),
                                   flag(body, "parse_special", true));
}

json piece(const Tokenizer& tokenizer, int32_t id) {
    const std::string bytes = tokenizer.token_text(id);
    if (is_valid_utf8(bytes)) return bytes;
    json out = json::array();
    for (const char c : bytes) out.push_back(static_cast<unsigned char>(c));
    return out;
}

}  // namespace

json tokenize_response(std::string_view text, const ServedModel& model) {
    const json body = parse_object(text);
    const char* input = input_field(body);
    const bool with_pieces = flag(body, "with_pieces", false);
    const std::vector<int32_t> tokens = tokens_of(text, body, input, model);
    json list = json::array();
    for (const int32_t id : tokens)
        list.push_back(with_pieces ? json{{"id", id}, {"piece", piece(*model.tokenizer, id)}}
                                   : json(id));
    return {{"tokens", std::move(list)},
            {"count", tokens.size()},
            {"max_model_len", model.context_length}};
}

json detokenize_response(std::string_view text, const ServedModel& model) {
    const json body = parse_object(text);
    if (!has(body, "tokens")) bad_request("tokens", "'tokens' is required");
    const json& v = body["tokens"];
    if (!v.is_array()) bad_request("tokens", "'tokens' must be an array of token ids");
    const auto n_vocab = static_cast<int64_t>(model.tokenizer->n_vocab());
    std::vector<int32_t> ids;
    for (const json& t : v) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab)
            bad_request("tokens", "token ids must be integers from 0 to {}, got {}", n_vocab - 1,
                        t.dump());
        ids.push_back(t.get<int32_t>());
    }
    return {{"content", model.tokenizer->decode(ids)}};
}

}  // namespace kite::server
