#include "server/response_format.h"

#include <chrono>
#include <cmath>
#include <random>

#include <fmt/format.h>

namespace kite::server {

using nlohmann::json;

json finish_reason_json(FinishReason reason) {
    switch (reason) {
        case FinishReason::None:
            return nullptr;
        case FinishReason::EndOfText:
        case FinishReason::StopString:
            return "stop";
        case FinishReason::MaxTokens:
        case FinishReason::ContextFull:
            return "length";
        case FinishReason::NonFinite:  // the worker ends such a request with an error instead
        case FinishReason::NoAllowedToken:
            return nullptr;
    }
    return nullptr;
}

namespace {

std::string random_id(const char* prefix) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return fmt::format("{}{:016x}{:08x}", prefix, rng(), static_cast<uint32_t>(rng()));
}

// JSON has no infinities: a banned token's log-probability is reported as -9999.
double finite_logprob(float lp) {
    return std::isfinite(lp) ? lp : -9999.0;
}

json bytes_json(const std::string& s) {
    json out = json::array();
    for (unsigned char c : s) out.push_back(int(c));
    return out;
}

}  // namespace

ResponseFormatter::ResponseFormatter(bool chat, bool want_logprobs, std::string model_id,
                                     const Tokenizer& tokenizer)
    : chat_(chat),
      want_logprobs_(want_logprobs),
      id_(random_id(chat ? "chatcmpl-" : "cmpl-")),
      model_id_(std::move(model_id)),
      created_(std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      tokenizer_(tokenizer) {}

std::string ResponseFormatter::dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json ResponseFormatter::envelope(const char* object) const {
    return {{"id", id_}, {"object", object}, {"created", created_}, {"model", model_id_}};
}

json ResponseFormatter::usage_json(const Usage& u) const {
    return {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

json ResponseFormatter::logprobs_json(const std::vector<TokenLogprob>& lps,
                                      size_t text_offset) const {
    if (chat_) {
        json content = json::array();
        for (const TokenLogprob& lp : lps) {
            const std::string text = tokenizer_.token_text(lp.token);
            json top = json::array();
            for (const TokenProb& t : lp.top) {
                const std::string tt = tokenizer_.token_text(t.id);
                top.push_back({{"token", tt},
                               {"logprob", finite_logprob(t.logprob)},
                               {"bytes", bytes_json(tt)}});
            }
            content.push_back({{"token", text},
                               {"logprob", finite_logprob(lp.logprob)},
                               {"bytes", bytes_json(text)},
                               {"top_logprobs", top}});
        }
        return {{"content", content}};
    }
    json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
         offsets = json::array();
    for (const TokenLogprob& lp : lps) {
        const std::string text = tokenizer_.token_text(lp.token);
        tokens.push_back(text);
        token_logprobs.push_back(finite_logprob(lp.logprob));
        json t = json::object();
        for (const TokenProb& p : lp.top)
            t[tokenizer_.token_text(p.id)] = finite_logprob(p.logprob);
        top.push_back(t);
        offsets.push_back(text_offset);
        text_offset += text.size();
    }
    return {{"tokens", tokens},
            {"token_logprobs", token_logprobs},
            {"top_logprobs", top},
            {"text_offset", offsets}};
}

void ResponseFormatter::enable_tool_calls(size_t n_choices) {
    tool_streams_.assign(n_choices, ToolCallStream());
}

json ResponseFormatter::response(const std::vector<ChoiceResult>& choices,
                                 const Usage& usage) const {
    json out = envelope(chat_ ? "chat.completion" : "text_completion");
    json list = json::array();
    for (size_t i = 0; i < choices.size(); ++i) {
        const ChoiceResult& c = choices[i];
        json choice = {{"index", i}};
        if (chat_)
            choice["message"] = {{"role", "assistant"}, {"content", c.text}};
        else
            choice["text"] = c.text;
        choice["logprobs"] = want_logprobs_ ? logprobs_json(c.logprobs, 0) : json();
        choice["finish_reason"] = finish_reason_json(c.finish);
        if (chat_ && !tool_streams_.empty()) {
            ParsedReply reply = parse_tool_calls(c.text);
            if (!reply.calls.empty()) {
                choice["message"]["content"] =
                    reply.content.empty() ? json() : json(std::move(reply.content));
                choice["message"]["tool_calls"] = tool_calls_json(reply.calls, false);
                choice["finish_reason"] = "tool_calls";
            }
        }
        list.push_back(std::move(choice));
    }
    out["choices"] = std::move(list);
    out["usage"] = usage_json(usage);
    return out;
}

json ResponseFormatter::chunk(int index, const std::string& text,
                              const std::vector<TokenLogprob>& lps, FinishReason finish,
                              bool first) {
    json out = envelope(chat_ ? "chat.completion.chunk" : "text_completion");
    json choice = {{"index", index}};
    std::vector<ToolCall> calls;
    if (chat_) {
        std::string content = text;
        if (!tool_streams_.empty()) {
            ToolCallStream& stream = tool_streams_.at(static_cast<size_t>(index));
            content = stream.feed(text);
            if (finish != FinishReason::None) {
                ParsedReply reply = stream.finish();
                content += reply.content;
                calls = std::move(reply.calls);
            }
        }
        json delta = json::object();
        if (first) delta["role"] = "assistant";
        if (!content.empty() || first) delta["content"] = content;
        if (!calls.empty()) delta["tool_calls"] = tool_calls_json(calls, true);
        choice["delta"] = std::move(delta);
    } else {
        choice["text"] = text;
    }
    choice["logprobs"] = want_logprobs_ && !lps.empty() ? logprobs_json(lps, 0) : json();
    choice["finish_reason"] = calls.empty() ? finish_reason_json(finish) : json("tool_calls");
    out["choices"] = json::array({std::move(choice)});
    return out;
}

bool ResponseFormatter::carries_nothing(const json& chunk) {
    const json& choice = chunk.at("choices").at(0);
    if (!choice.at("finish_reason").is_null() || !choice.at("logprobs").is_null()) return false;
    if (choice.contains("delta")) return choice.at("delta").empty();
    return choice.at("text").get_ref<const std::string&>().empty();
}

json ResponseFormatter::usage_chunk(const Usage& usage) const {
    json out = envelope(chat_ ? "chat.completion.chunk" : "text_completion");
    out["choices"] = json::array();
    out["usage"] = usage_json(usage);
    return out;
}

}  // namespace kite::server
