#include "server/request_parser.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "server/api_error.h"
#include "server/output_constraint.h"

namespace kite::server {

using nlohmann::json;

int64_t CompletionRequest::max_tokens_for(size_t prompt_tokens, int64_t context_length) const {
    if (max_tokens) return *max_tokens;
    if (!chat) return 16;
    if (params.kv_window.enabled()) return context_length;
    return std::max<int64_t>(1, context_length - static_cast<int64_t>(prompt_tokens));
}

namespace {

// A field that is present and not null.
const json* field(const json& body, const char* name) {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

double number(const json& body, const char* name, double lo, double hi, double fallback) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_number()) bad_request(name, "'{}' must be a number", name);
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi)
        bad_request(name, "'{}' must be between {} and {}, got {}", name, lo, hi, v->dump());
    return x;
}

int64_t integer(const json& body, const char* name, int64_t lo, int64_t hi, int64_t fallback) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_number_integer()) bad_request(name, "'{}' must be an integer", name);
    if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(hi))
        bad_request(name, "'{}' must be between {} and {}, got {}", name, lo, hi, v->dump());
    const int64_t x = v->get<int64_t>();
    if (x < lo || x > hi)
        bad_request(name, "'{}' must be between {} and {}, got {}", name, lo, hi, x);
    return x;
}

// Kite's own `kv_window` and `kv_sinks`: a request may turn the server's window off
// (kv_window 0) or choose its own; sinks default to the server's, or 4.
KvWindow kv_window(const json& body, const ServedModel& model) {
    const KvWindow& served = model.kv_window;
    const int64_t window = integer(body, "kv_window", 0, model.context_length, served.window);
    const int64_t default_sinks = window == 0 ? 0 : served.enabled() ? served.sinks : 4;
    const int64_t sinks = integer(body, "kv_sinks", 0, model.context_length, default_sinks);
    if (window == 0 && sinks > 0) bad_request("kv_sinks", "'kv_sinks' needs 'kv_window'");
    if (window < sinks)
        bad_request("kv_window", "'kv_window' ({}) must be at least 'kv_sinks' ({})", window,
                    sinks);
    return {window, sinks};
}

bool boolean(const json& body, const char* name, bool fallback) {
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_boolean()) bad_request(name, "'{}' must be true or false", name);
    return v->get<bool>();
}

// llama.cpp's dry_sequence_breakers: an array of non-empty strings (absent: the defaults).
std::vector<std::string> dry_breakers(const json& body) {
    const json* v = field(body, "dry_sequence_breakers");
    if (!v) return SamplingParams{}.dry_sequence_breakers;
    constexpr size_t kMost = SamplingParams::kMaxDryBreakers;
    constexpr size_t kLongest = SamplingParams::kMaxDryBreakerBytes;
    if (!v->is_array() || v->size() > kMost)
        bad_request("dry_sequence_breakers",
                    "'dry_sequence_breakers' must be an array of at most {} strings", kMost);
    std::vector<std::string> out;
    for (const json& s : *v) {
        if (!s.is_string() || s.get<std::string>().empty() ||
            s.get<std::string>().size() > kLongest)
            bad_request("dry_sequence_breakers",
                        "each of 'dry_sequence_breakers' must be a string of 1 to {} bytes",
                        kLongest);
        out.push_back(s.get<std::string>());
    }
    return out;
}

std::vector<std::string> stop_strings(const json& body) {
    const json* v = field(body, "stop");
    if (!v) return {};
    std::vector<std::string> out;
    if (v->is_string()) {
        out.push_back(v->get<std::string>());
    } else if (v->is_array()) {
        if (v->size() > kMaxStopStrings)
            bad_request("stop", "'stop' may hold at most {} strings", kMaxStopStrings);
        for (const json& s : *v) {
            if (!s.is_string()) bad_request("stop", "'stop' must be a string or strings");
            out.push_back(s.get<std::string>());
        }
    } else {
        bad_request("stop", "'stop' must be a string or an array of strings");
    }
    for (const std::string& s : out) {
        if (s.empty()) bad_request("stop", "a stop string must not be empty");
        if (s.size() > 256) bad_request("stop", "a stop string may be at most 256 bytes");
    }
    return out;
}

std::map<int32_t, float> logit_bias(const json& body, int32_t n_vocab) {
    const json* v = field(body, "logit_bias");
    if (!v) return {};
    if (!v->is_object()) bad_request("logit_bias", "'logit_bias' must map token ids to numbers");
    if (v->size() > 1024) bad_request("logit_bias", "'logit_bias' may hold at most 1024 tokens");
    std::map<int32_t, float> out;
    for (const auto& [key, bias] : v->items()) {
        size_t end = 0;
        long long id = -1;
        try {
            id = std::stoll(key, &end);
        } catch (const std::exception&) {
            end = 0;
        }
        if (end != key.size() || id < 0 || id >= n_vocab)
            bad_request("logit_bias", "logit_bias key '{}' is not a token id (0..{})", key,
                        n_vocab - 1);
        if (!bias.is_number() || !std::isfinite(bias.get<double>()) ||
            std::fabs(bias.get<double>()) > 100)
            bad_request("logit_bias", "logit_bias values must be numbers from -100 to 100");
        out[static_cast<int32_t>(id)] = bias.get<float>();
    }
    return out;
}

std::vector<int32_t> token_array(const json& a, int32_t n_vocab) {
    std::vector<int32_t> out;
    for (const json& t : a) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab)
            bad_request("prompt", "prompt token ids must be integers from 0 to {}", n_vocab - 1);
        out.push_back(t.get<int32_t>());
    }
    return out;
}

std::vector<std::vector<int32_t>> completion_prompts(const json& body, const Tokenizer& tok) {
    const json* v = field(body, "prompt");
    if (!v) bad_request("prompt", "'prompt' is required");
    const auto n_vocab = static_cast<int32_t>(tok.n_vocab());
    auto encode = [&](const json& s) { return tok.encode(s.get<std::string>(), true, true); };
    std::vector<std::vector<int32_t>> out;
    if (v->is_string()) {
        out.push_back(encode(*v));
    } else if (v->is_array() && !v->empty() && v->front().is_number()) {
        out.push_back(token_array(*v, n_vocab));
    } else if (v->is_array() && !v->empty()) {
        for (const json& p : *v) {
            if (p.is_string())
                out.push_back(encode(p));
            else if (p.is_array())
                out.push_back(token_array(p, n_vocab));
            else
                bad_request("prompt", "'prompt' must be a string, strings, or token id arrays");
        }
    } else {
        bad_request("prompt", "'prompt' must be a non-empty string or array");
    }
    for (const auto& p : out)
        if (p.empty()) bad_request("prompt", "the prompt is empty");
    return out;
}

using ojson = nlohmann::ordered_json;

// A message's content as the template gets it: a string (text parts joined), or null.
ojson message_content(const ojson& m, const std::string& param) {
    const auto c = m.find("content");
    if (c == m.end() || c->is_null()) return nullptr;
    if (c->is_string()) return *c;
    if (!c->is_array())
        bad_request(param + ".content", "'{}.content' must be a string or an array of parts",
                    param);
    std::string text;
    for (const ojson& part : *c) {
        const bool is_text = part.is_object() && part.contains("type") && part["type"] == "text" &&
                             part.contains("text") && part["text"].is_string();
        if (!is_text)
            bad_request(param + ".content", "only text content parts are supported in '{}'",
                        param + ".content");
        text += part["text"].get<std::string>();
    }
    return text;
}

// An assistant message's tool_calls; arguments sent as a JSON string become the object the
// templates expect (they write `arguments | tojson`).
ojson message_tool_calls(const ojson& calls, const std::string& param) {
    if (!calls.is_array()) bad_request(param, "'{}' must be an array", param);
    ojson out = ojson::array();
    for (const ojson& call : calls) {
        const bool ok = call.is_object() && call.contains("function") &&
                        call["function"].is_object() && call["function"].contains("name") &&
                        call["function"]["name"].is_string();
        if (!ok) bad_request(param, "each of '{}' needs function.name", param);
        ojson c = call;
        ojson& args = c["function"]["arguments"];
        if (args.is_string()) {
            ojson parsed = ojson::parse(args.get<std::string>(), nullptr, false);
            if (!parsed.is_discarded() && parsed.is_object()) args = std::move(parsed);
        } else if (args.is_null()) {
            args = ojson::object();
        }
        out.push_back(std::move(c));
    }
    return out;
}

ojson chat_messages(const ojson& body) {
    const auto v = body.find("messages");
    if (v == body.end() || !v->is_array() || v->empty())
        bad_request("messages", "'messages' must be a non-empty array");
    ojson messages = ojson::array();
    for (size_t i = 0; i < v->size(); ++i) {
        const ojson& m = (*v)[i];
        const std::string param = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) bad_request(param, "'{}' must be an object", param);
        const auto role = m.find("role");
        if (role == m.end() || !role->is_string())
            bad_request(param + ".role", "'{}.role' must be a string", param);
        std::string r = role->get<std::string>();
        if (r == "developer") r = "system";
        if (r != "system" && r != "user" && r != "assistant" && r != "tool")
            bad_request(param + ".role", "unsupported role '{}' (system, user, assistant, tool)",
                        r);
        ojson out = {{"role", r}, {"content", message_content(m, param)}};
        if (r == "assistant" && m.contains("tool_calls") && !m["tool_calls"].is_null())
            out["tool_calls"] = message_tool_calls(m["tool_calls"], param + ".tool_calls");
        for (const char* key : {"tool_call_id", "name"})
            if (m.contains(key) && m[key].is_string()) out[key] = m[key];
        // Null content (an assistant turn that only calls tools) reaches the template as "":
        // many templates concatenate content, which Python refuses for None.
        if (out["content"].is_null()) out["content"] = "";
        messages.push_back(std::move(out));
    }
    return messages;
}

// tools: [{"type": "function", "function": {"name", "description", "parameters"}}].
ojson chat_tools(const ojson& body) {
    const auto t = body.find("tools");
    if (t == body.end() || t->is_null()) return nullptr;
    if (!t->is_array()) bad_request("tools", "'tools' must be an array");
    for (const ojson& tool : *t) {
        const bool ok = tool.is_object() && tool.contains("function") &&
                        tool["function"].is_object() && tool["function"].contains("name") &&
                        tool["function"]["name"].is_string();
        if (!ok)
            bad_request("tools",
                        "each tool must be {{\"type\": \"function\", \"function\": "
                        "{{\"name\": ...}}}}");
    }
    return t->empty() ? ojson(nullptr) : *t;
}

// tool_choice: "none", "auto", "required" or {"type": "function", "function": {"name"}}.
ojson chat_tool_choice(const ojson& body) {
    const auto c = body.find("tool_choice");
    if (c == body.end() || c->is_null()) return nullptr;
    if (c->is_string() && (*c == "none" || *c == "auto" || *c == "required")) return *c;
    if (c->is_object() && c->contains("function") && (*c)["function"].is_object() &&
        (*c)["function"].contains("name") && (*c)["function"]["name"].is_string())
        return *c;
    bad_request("tool_choice", "'tool_choice' must be none, auto, required or a named function");
}

void reject_unsupported(const json& body, bool chat) {
    // vLLM's: JSON with other whitespace than ours would be a different language.
    if (field(body, "guided_whitespace_pattern"))
        bad_request("guided_whitespace_pattern", "'guided_whitespace_pattern' is not supported");
    if (boolean(body, "echo", false)) bad_request("echo", "'echo' is not supported");
    if (field(body, "suffix")) bad_request("suffix", "'suffix' is not supported");
    if (!chat && field(body, "tools")) bad_request("tools", "tools need /v1/chat/completions");
    if (field(body, "functions")) bad_request("functions", "functions are not supported");
}

}  // namespace

ChatPrompt chat_prompt(std::string_view body_text, const ServedModel& model,
                       bool add_generation_prompt) {
    if (!model.chat_template)
        throw ApiError(400, "this model has no chat template; use /v1/completions", "messages");
    // Parsed again keeping key order: the template writes tools' schemas as given.
    const ojson body = ojson::parse(body_text, nullptr, false);
    const ojson messages = chat_messages(body);
    ChatRequestContext context;
    context.tool_choice = chat_tool_choice(body);
    if (context.tool_choice != "none") context.tools = chat_tools(body);
    std::string text;
    try {
        text = model.chat_template->render(messages, add_generation_prompt, context);
    } catch (const Error& e) {
        bad_request("messages", "{}", e.what());
    }
    return {model.chat_template->tokenize(*model.tokenizer, text), !context.tools.is_null()};
}

CompletionRequest parse_completion_request(std::string_view body_text, bool chat,
                                           const ServedModel& model) {
    const json body = json::parse(body_text, nullptr, false);
    if (body.is_discarded()) bad_request("", "the request body is not valid JSON");
    if (!body.is_object()) bad_request("", "the request body must be a JSON object");

    if (const json* m = field(body, "model")) {
        if (!m->is_string()) bad_request("model", "'model' must be a string");
        if (m->get<std::string>() != model.id)
            throw ApiError(404, "The model '" + m->get<std::string>() + "' does not exist", "model",
                           "invalid_request_error", "model_not_found");
    }
    reject_unsupported(body, chat);

    CompletionRequest r;
    r.chat = chat;
    const auto n_vocab = static_cast<int32_t>(model.tokenizer->n_vocab());
    r.stream = boolean(body, "stream", false);
    if (const json* so = field(body, "stream_options")) {
        // As OpenAI and vLLM answer: options for a stream that will not be sent are a mistake.
        if (!r.stream)
            bad_request("stream_options", "'stream_options' is only allowed with 'stream': true");
        if (!so->is_object()) bad_request("stream_options", "'stream_options' must be an object");
        r.include_usage = boolean(*so, "include_usage", false);
    }
    r.n = static_cast<int>(integer(body, "n", 1, kMaxChoices, 1));
    if (const json* b = field(body, "best_of"); b && *b != r.n)
        bad_request("best_of", "'best_of' must equal 'n' (no server-side best-of)");

    GenerationParams& p = r.params;
    p.kv_window = kv_window(body, model);
    // A window lets a request generate past the context.
    const int64_t most_tokens =
        p.kv_window.enabled() ? std::numeric_limits<int32_t>::max() : model.context_length;
    const char* max_name =
        chat && field(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (field(body, max_name)) r.max_tokens = integer(body, max_name, 1, most_tokens, 16);

    SamplingParams& s = p.sampling;
    s.temperature = static_cast<float>(number(body, "temperature", 0, 2, 1));
    s.top_p = static_cast<float>(number(body, "top_p", 0, 1, 1));
    if (s.top_p <= 0) bad_request("top_p", "'top_p' must be greater than 0");
    s.top_k = static_cast<int32_t>(integer(body, "top_k", -1, n_vocab, 0));
    if (s.top_k < 0) s.top_k = 0;  // -1 means off, as in vLLM
    s.min_p = static_cast<float>(number(body, "min_p", 0, 1, 0));
    s.presence_penalty = static_cast<float>(number(body, "presence_penalty", -2, 2, 0));
    s.frequency_penalty = static_cast<float>(number(body, "frequency_penalty", -2, 2, 0));
    s.repetition_penalty = static_cast<float>(number(body, "repetition_penalty", 0.01, 10, 1));
    // llama.cpp's name and meaning: the tokens the penalties look back on, -1 all of them.
    s.penalty_last_n =
        static_cast<int32_t>(integer(body, "repeat_last_n", -1, std::numeric_limits<int32_t>::max(),
                                     SamplingParams{}.penalty_last_n));
    // DRY, llama.cpp's fields (sampling/dry.h).
    s.dry_multiplier = static_cast<float>(number(body, "dry_multiplier", 0, 100, 0));
    s.dry_base = static_cast<float>(number(body, "dry_base", 1, 100, SamplingParams{}.dry_base));
    s.dry_allowed_length = static_cast<int32_t>(integer(
        body, "dry_allowed_length", 0, model.context_length, SamplingParams{}.dry_allowed_length));
    s.dry_penalty_last_n = static_cast<int32_t>(
        integer(body, "dry_penalty_last_n", -1, std::numeric_limits<int32_t>::max(), -1));
    s.dry_sequence_breakers = dry_breakers(body);
    s.logit_bias = logit_bias(body, n_vocab);
    if (field(body, "seed")) {
        r.seed_given = true;
        s.seed = static_cast<uint64_t>(integer(body, "seed", std::numeric_limits<int64_t>::min(),
                                               std::numeric_limits<int64_t>::max(), 0));
    }
    p.stop = stop_strings(body);
    p.ignore_eos = boolean(body, "ignore_eos", false);
    // Kite's own: false opts this request out of the server's speculative decoding.
    p.speculative = boolean(body, "speculative", true);

    if (chat) {
        if (boolean(body, "logprobs", false))
            r.logprobs = static_cast<int32_t>(integer(body, "top_logprobs", 0, kMaxTopLogprobs, 0));
        else if (field(body, "top_logprobs"))
            bad_request("top_logprobs", "'top_logprobs' needs 'logprobs': true");
        ChatPrompt prompt = chat_prompt(body_text, model);
        r.tool_calls = prompt.tool_calls;
        r.prompts.push_back(std::move(prompt.tokens));
    } else {
        r.logprobs = static_cast<int32_t>(integer(body, "logprobs", 0, kMaxTopLogprobs, -1));
        r.prompts = completion_prompts(body, *model.tokenizer);
    }
    p.constraint = output_constraint(body_text, body, model);
    p.logprobs = r.logprobs;
    if (r.prompts.size() * static_cast<size_t>(r.n) > kMaxChoices)
        bad_request("n", "at most {} choices per request (prompts times n)", kMaxChoices);
    for (const auto& prompt : r.prompts) {
        const auto len = static_cast<int64_t>(prompt.size());
        const int64_t max_tokens = r.max_tokens_for(prompt.size(), model.context_length);
        if (!p.kv_window.enabled() && len + max_tokens > model.context_length)
            bad_request(r.max_tokens ? max_name : (chat ? "messages" : "prompt"),
                        "This model's maximum context length is {} tokens. However, you "
                        "requested {} tokens ({} in the prompt, {} for the completion).",
                        model.context_length, len + max_tokens, len, max_tokens);
    }
    return r;
}

}  // namespace kite::server
