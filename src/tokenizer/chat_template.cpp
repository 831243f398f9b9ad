#include "tokenizer/chat_template.h"

#include "core/error.h"

namespace kite {

namespace {

// A template that writes a fixed system message when the conversation has none holds it
// as a literal: '<|im_start|>system\n...<|im_end|>', the newline written out or as a Jinja
// escape. Returns "" when there is no such literal.
std::string find_default_system(std::string_view source) {
    constexpr std::string_view open = "<|im_start|>system", close = "<|im_end|>";
    for (size_t at = source.find(open); at != std::string_view::npos;
         at = source.find(open, at + 1)) {
        std::string_view rest = source.substr(at + open.size());
        if (rest.starts_with("\\n"))
            rest.remove_prefix(2);
        else if (rest.starts_with("\n"))
            rest.remove_prefix(1);
        else
            continue;
        const size_t end = rest.find(close);
        const std::string_view text = rest.substr(0, end);
        // A literal message, not template code that builds one.
        if (end != std::string_view::npos && text.find_first_of("'\"{}") == std::string_view::npos)
            return std::string(text);
    }
    return "";
}

std::string render_chatml(std::span<const ChatMessage> messages, const std::string& default_system,
                          bool add_generation_prompt) {
    std::string out;
    if (!default_system.empty() && (messages.empty() || messages[0].role != "system"))
        out += "<|im_start|>system\n" + default_system + "<|im_end|>\n";
    for (const ChatMessage& m : messages)
        out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
}

std::string render_llama3(std::span<const ChatMessage> messages, bool add_generation_prompt) {
    std::string out = "<|begin_of_text|>";
    for (const ChatMessage& m : messages)
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + m.content + "<|eot_id|>";
    if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
}

// A system message is folded into the first user turn, as the llama 2 format does.
std::string render_llama2(std::span<const ChatMessage> messages) {
    std::string out, system;
    for (const ChatMessage& m : messages) {
        if (m.role == "system") {
            system = "<<SYS>>\n" + m.content + "\n<</SYS>>\n\n";
        } else if (m.role == "user") {
            out += "<s>[INST] " + system + m.content + " [/INST]";
            system.clear();
        } else {
            out += " " + m.content + " </s>";
        }
    }
    return out;
}

}  // namespace

ChatTemplate ChatTemplate::from_gguf(const GgufFile& file) {
    std::optional<std::string_view> source = file.get_string("tokenizer.chat_template");
    if (!source) fail("'{}' has no chat template (tokenizer.chat_template)", file.name());
    return from_source(*source);
}

ChatTemplate ChatTemplate::from_source(std::string_view source) {
    ChatTemplate t;
    if (source.find("<|im_start|>") != std::string_view::npos) {
        t.style_ = Style::ChatML;
        t.default_system_ = find_default_system(source);
    } else if (source.find("<|start_header_id|>") != std::string_view::npos) {
        t.style_ = Style::Llama3;
    } else if (source.find("[INST]") != std::string_view::npos) {
        t.style_ = Style::Llama2;
    } else {
        fail(
            "the model's chat template is not one Kite recognises (supported: chatml, llama3, "
            "llama2)");
    }
    return t;
}

const char* ChatTemplate::name() const {
    switch (style_) {
        case Style::ChatML:
            return "chatml";
        case Style::Llama3:
            return "llama3";
        case Style::Llama2:
            return "llama2";
    }
    return "?";
}

std::string ChatTemplate::render(std::span<const ChatMessage> messages,
                                 bool add_generation_prompt) const {
    for (const ChatMessage& m : messages)
        if (m.role != "system" && m.role != "user" && m.role != "assistant")
            fail("unknown chat role '{}' (use system, user or assistant)", m.role);
    switch (style_) {
        case Style::ChatML:
            return render_chatml(messages, default_system_, add_generation_prompt);
        case Style::Llama3:
            return render_llama3(messages, add_generation_prompt);
        case Style::Llama2:
            return render_llama2(messages);
    }
    return "";
}

}  // namespace kite
