#include "server/embedding_request.h"

#include <cmath>
#include <cstring>

#include "core/normalize.h"
#include "server/api_error.h"
#include "tokenizer/tokenizer.h"

namespace kite::server {

using nlohmann::json;

namespace {

// A list of token ids, each checked against the vocabulary.
std::vector<int32_t> token_ids(const json& list, size_t n_vocab, const std::string& where) {
    std::vector<int32_t> ids;
    for (const json& id : list) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
            uint64_t(id.get<int64_t>()) >= n_vocab)
            bad_request("input", "{} holds {}, not a token id (0 to {})", where, id.dump(),
                        n_vocab - 1);
        ids.push_back(int32_t(id.get<int64_t>()));
    }
    return ids;
}

// One input: a string, or a list of token ids.
std::vector<int32_t> one_input(const json& item, const ServedModel& model,
                               const std::string& where) {
    if (item.is_string()) {
        const std::string text = item.get<std::string>();
        if (text.empty()) bad_request("input", "{} is an empty string", where);
        return model.tokenizer->encode(text, true, false);
    }
    if (!item.is_array() || item.empty())
        bad_request("input", "{} must be a non-empty string or list of token ids", where);
    return token_ids(item, model.tokenizer->n_vocab(), where);
}

std::vector<std::vector<int32_t>> inputs(const json& body, const ServedModel& model) {
    auto it = body.find("input");
    if (it == body.end() || it->is_null()) bad_request("input", "'input' is required");
    const json& input = *it;
    if (input.is_string()) return {one_input(input, model, "'input'")};
    if (!input.is_array() || input.empty())
        bad_request("input", "'input' must be a string or a non-empty list");
    if (input.size() > kMaxEmbeddingInputs)
        bad_request("input", "'input' has {} items, more than {}", input.size(),
                    kMaxEmbeddingInputs);
    // A list of numbers is one input of token ids; otherwise each item is an input.
    if (input[0].is_number()) return {token_ids(input, model.tokenizer->n_vocab(), "'input'")};
    std::vector<std::vector<int32_t>> out;
    for (size_t i = 0; i < input.size(); ++i)
        out.push_back(one_input(input[i], model, fmt::format("'input[{}]'", i)));
    return out;
}

std::string base64(const float* values, int64_t n) {
    static constexpr char kDigits[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string bytes(size_t(n) * 4, '\0');
    std::memcpy(bytes.data(), values, bytes.size());  // x86-64 and AArch64 are little-endian
    std::string out;
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const size_t left = bytes.size() - i;
        uint32_t group = uint32_t(uint8_t(bytes[i])) << 16;
        if (left > 1) group |= uint32_t(uint8_t(bytes[i + 1])) << 8;
        if (left > 2) group |= uint8_t(bytes[i + 2]);
        out += kDigits[(group >> 18) & 63];
        out += kDigits[(group >> 12) & 63];
        out += left > 1 ? kDigits[(group >> 6) & 63] : '=';
        out += left > 2 ? kDigits[group & 63] : '=';
    }
    return out;
}

}  // namespace

EmbeddingRequest parse_embedding_request(std::string_view body_text, const ServedModel& model,
                                         int64_t n_embd) {
    const json body = json::parse(body_text, nullptr, false);
    if (body.is_discarded()) bad_request("", "the request body is not valid JSON");
    if (!body.is_object()) bad_request("", "the request body must be a JSON object");
    if (auto m = body.find("model"); m != body.end() && !m->is_null()) {
        if (!m->is_string()) bad_request("model", "'model' must be a string");
        if (m->get<std::string>() != model.id)
            throw ApiError(404, "The model '" + m->get<std::string>() + "' does not exist", "model",
                           "invalid_request_error", "model_not_found");
    }
    EmbeddingRequest r;
    r.dimensions = n_embd;
    if (auto d = body.find("dimensions"); d != body.end() && !d->is_null()) {
        if (!d->is_number_integer() || d->get<int64_t>() < 1 || d->get<int64_t>() > n_embd)
            bad_request("dimensions", "'dimensions' must be an integer from 1 to {}, got {}",
                        n_embd, d->dump());
        r.dimensions = d->get<int64_t>();
    }
    if (auto f = body.find("encoding_format"); f != body.end() && !f->is_null()) {
        if (*f != "float" && *f != "base64")
            bad_request("encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
        r.base64 = *f == "base64";
    }
    r.inputs = inputs(body, model);
    for (size_t i = 0; i < r.inputs.size(); ++i) {
        const auto n = int64_t(r.inputs[i].size());
        if (n > model.context_length)
            bad_request("input", "input {} has {} tokens, more than the model's context of {}", i,
                        n, model.context_length);
        r.prompt_tokens += n;
    }
    return r;
}

json embedding_response(std::vector<float>& vectors, int64_t n_embd,
                        const EmbeddingRequest& request, const std::string& model_id) {
    json data = json::array();
    for (size_t i = 0; i < request.inputs.size(); ++i) {
        float* v = &vectors[i * size_t(n_embd)];
        normalize_l2(v, request.dimensions);
        json item = {{"object", "embedding"}, {"index", i}};
        if (request.base64)
            item["embedding"] = base64(v, request.dimensions);
        else
            item["embedding"] = std::vector<float>(v, v + request.dimensions);
        data.push_back(std::move(item));
    }
    return {{"object", "list"},
            {"data", std::move(data)},
            {"model", model_id},
            {"usage",
             {{"prompt_tokens", request.prompt_tokens}, {"total_tokens", request.prompt_tokens}}}};
}

}  // namespace kite::server
