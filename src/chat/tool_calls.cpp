#include "chat/tool_calls.h"

#include <atomic>
#include <cctype>
#include <random>

#include <fmt/format.h>

namespace kite::server {

namespace {

using nlohmann::json;

constexpr std::string_view kHermesOpen = "<tool_call>", kHermesClose = "</tool_call>";
constexpr std::string_view kMistral = "[TOOL_CALLS]", kMistralArgs = "[ARGS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kFence = "```";
constexpr std::string_view kMarkers[] = {kHermesOpen, kMistral, kPythonTag};

std::string trim(std::string_view s) {
    const size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string_view::npos) return "";
    const size_t e = s.find_last_not_of(" \t\r\n");
    return std::string(s.substr(b, e - b + 1));
}

std::string new_call_id() {
    static std::atomic<uint64_t> counter{std::random_device{}()};
    return fmt::format("call_{:016x}", counter.fetch_add(0x9e3779b97f4a7c15ull));
}

// {"name": ..., "arguments" | "parameters": ...} as a call; anything else is none.
bool call_from_json(const json& j, std::vector<ToolCall>& out) {
    if (!j.is_object()) return false;
    const auto name = j.find("name");
    if (name == j.end() || !name->is_string()) return false;
    auto args = j.find("arguments");
    if (args == j.end()) args = j.find("parameters");
    ToolCall call;
    call.id = j.contains("id") && j["id"].is_string() ? j["id"].get<std::string>() : new_call_id();
    call.name = name->get<std::string>();
    if (args == j.end())
        call.arguments = "{}";
    else
        call.arguments = args->is_string() ? args->get<std::string>() : args->dump();
    out.push_back(std::move(call));
    return true;
}

// One call object or an array of them.
bool calls_from_json_text(std::string_view text, std::vector<ToolCall>& out) {
    const json j = json::parse(text, nullptr, false);
    if (j.is_discarded()) return false;
    std::vector<ToolCall> calls;
    if (j.is_array()) {
        for (const json& item : j)
            if (!call_from_json(item, calls)) return false;
    } else if (!call_from_json(j, calls)) {
        return false;
    }
    out.insert(out.end(), calls.begin(), calls.end());
    return !calls.empty();
}

bool parse_hermes(std::string_view text, ParsedReply& reply) {
    if (text.find(kHermesOpen) == std::string_view::npos) return false;
    std::string content;
    size_t at = 0;
    while (true) {
        const size_t open = text.find(kHermesOpen, at);
        if (open == std::string_view::npos) break;
        content += text.substr(at, open - at);
        const size_t body = open + kHermesOpen.size();
        size_t close = text.find(kHermesClose, body);
        // A reply cut off by a stop token may lack the last closing tag.
        const std::string_view inner = text.substr(
            body, close == std::string_view::npos ? std::string_view::npos : close - body);
        if (!calls_from_json_text(trim(inner), reply.calls)) return false;
        if (close == std::string_view::npos) {
            at = text.size();
            break;
        }
        at = close + kHermesClose.size();
    }
    content += text.substr(at);
    reply.content = trim(content);
    return true;
}

bool parse_mistral(std::string_view text, ParsedReply& reply) {
    const size_t marker = text.find(kMistral);
    if (marker == std::string_view::npos) return false;
    std::string_view rest = text.substr(marker + kMistral.size());
    std::vector<ToolCall> calls;
    const std::string body = trim(rest);
    if (!body.empty() && (body[0] == '[' || body[0] == '{')) {
        if (!calls_from_json_text(body, calls)) return false;
    } else {
        // name[ARGS]{...}, repeated after further [TOOL_CALLS] markers.
        for (const std::string& part : [&] {
                 std::vector<std::string> parts;
                 size_t at = 0;
                 while (at <= rest.size()) {
                     const size_t next = rest.find(kMistral, at);
                     parts.emplace_back(rest.substr(
                         at, next == std::string_view::npos ? std::string_view::npos : next - at));
                     if (next == std::string_view::npos) break;
                     at = next + kMistral.size();
                 }
                 return parts;
             }()) {
            const size_t args = part.find(kMistralArgs);
            if (args == std::string::npos) return false;
            const json j =
                json::parse(trim(part.substr(args + kMistralArgs.size())), nullptr, false);
            if (j.is_discarded()) return false;
            calls.push_back({new_call_id(), trim(part.substr(0, args)), j.dump()});
        }
    }
    reply.calls = std::move(calls);
    reply.content = trim(text.substr(0, marker));
    return true;
}

// Llama 3.x: the whole reply is the call (or calls separated by ';').
bool parse_llama_json(std::string_view text, ParsedReply& reply) {
    std::string body = trim(text);
    if (body.starts_with(kPythonTag)) body = trim(std::string_view(body).substr(kPythonTag.size()));
    if (body.empty() || (body[0] != '{' && body[0] != '[')) return false;
    std::vector<ToolCall> calls;
    if (!calls_from_json_text(body, calls)) {
        size_t at = 0;
        while (at < body.size()) {
            size_t next = body.find("};", at);
            const size_t end = next == std::string::npos ? body.size() : next + 1;
            if (!calls_from_json_text(trim(std::string_view(body).substr(at, end - at)), calls))
                return false;
            at = next == std::string::npos ? body.size() : next + 2;
        }
    }
    reply.calls = std::move(calls);
    return true;
}

// The text after a fence's opening backticks and language tag ("json", or none).
std::string_view after_fence_tag(std::string_view s) {
    s.remove_prefix(kFence.size());
    size_t i = 0;
    while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
    return s.substr(i);
}

// A whole reply that is one Markdown code fence holding a call object or an array of them.
bool parse_fenced_json(std::string_view text, ParsedReply& reply) {
    const std::string body = trim(text);
    if (body.size() < 2 * kFence.size() || !body.starts_with(kFence) || !body.ends_with(kFence))
        return false;
    std::string_view inner = after_fence_tag(body);
    inner.remove_suffix(kFence.size());
    std::vector<ToolCall> calls;
    if (!calls_from_json_text(trim(inner), calls)) return false;
    reply.calls = std::move(calls);
    return true;
}

enum class FenceStart { No, Maybe, Yes };

// Whether held text (trimmed at the front) opens a fenced call: "```json\n{" is one, "``" or
// "```json" may still become one, "```python\n" or "Sure" is none.
FenceStart fenced_call_start(std::string_view s) {
    if (s.size() < kFence.size()) return kFence.starts_with(s) ? FenceStart::Maybe : FenceStart::No;
    if (!s.starts_with(kFence)) return FenceStart::No;
    const std::string_view rest = after_fence_tag(s);
    const size_t first = rest.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return FenceStart::Maybe;
    return rest[first] == '{' || rest[first] == '[' ? FenceStart::Yes : FenceStart::No;
}

}  // namespace

ParsedReply parse_tool_calls(std::string_view text) {
    ParsedReply reply;
    if (parse_hermes(text, reply) || parse_mistral(text, reply) || parse_llama_json(text, reply) ||
        parse_fenced_json(text, reply))
        return reply;
    return {std::string(text), {}};
}

json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index) {
    json out = json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        json call = {{"id", calls[i].id},
                     {"type", "function"},
                     {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
        if (with_index) call["index"] = i;
        out.push_back(std::move(call));
    }
    return out;
}

std::string ToolCallStream::feed(std::string_view text) {
    held_ += text;
    if (capturing_) return "";
    // A Llama JSON or fenced call is the whole reply: hold a reply that starts like one.
    const std::string start = trim(held_);
    if (!sent_any_) {
        if (start.empty()) return "";
        const FenceStart fence = fenced_call_start(start);
        if (start[0] == '{' || start[0] == '[' || fence == FenceStart::Yes) {
            capturing_ = true;
            return "";
        }
        if (fence == FenceStart::Maybe) return "";
    }
    size_t first = std::string::npos;
    for (std::string_view m : kMarkers) first = std::min(first, held_.find(m));
    if (first != std::string::npos) {
        capturing_ = true;
        std::string out = held_.substr(0, first);
        held_.erase(0, first);
        sent_any_ = sent_any_ || !out.empty();
        return out;
    }
    // Hold back a tail that may be the start of a marker.
    size_t keep = 0;
    for (std::string_view m : kMarkers)
        for (size_t n = std::min(m.size() - 1, held_.size()); n > keep; --n)
            if (std::string_view(held_).substr(held_.size() - n) == m.substr(0, n)) {
                keep = n;
                break;
            }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    sent_any_ = sent_any_ || !out.empty();
    return out;
}

ParsedReply ToolCallStream::finish() {
    ParsedReply reply = parse_tool_calls(held_);
    held_.clear();
    return reply;
}

ToolCallFrame tool_call_frame(std::string_view template_source) {
    const auto has = [&](std::string_view what) {
        return template_source.find(what) != std::string_view::npos;
    };
    if (has("<tool_call>")) return {"<tool_call>\n", "\n</tool_call>", "arguments"};
    if (has("[TOOL_CALLS]")) return {"[TOOL_CALLS][", "]", "arguments"};
    return {"", "", has("parameters") ? "parameters" : "arguments"};
}

}  // namespace kite::server
