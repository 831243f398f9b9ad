#include "chat/chat_template.h"

#include <cstdio>

#include "core/error.h"
#include "core/text_file.h"
#include "template/template.h"

namespace kite {

namespace {

// The built-in formats, for model files that carry no template of their own.
constexpr std::string_view kChatML =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
constexpr std::string_view kLlama3 =
    "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\\n\\n' + message['content'] + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{% endif %}";
// A system message is folded into the first user turn, as the Llama 2 format does.
constexpr std::string_view kLlama2 =
    "{% set ns = namespace(system='') %}{% for message in messages %}"
    "{% if message['role'] == 'system' %}"
    "{% set ns.system = '<<SYS>>\\n' + message['content'] + '\\n<</SYS>>\\n\\n' %}"
    "{% elif message['role'] == 'user' %}{{ bos_token + '[INST] ' + ns.system + "
    "message['content'] + ' [/INST]' }}{% set ns.system = '' %}"
    "{% else %}{{ ' ' + message['content'] + ' ' + eos_token }}{% endif %}{% endfor %}";

std::string_view builtin_source(std::string_view name) {
    if (name == "chatml") return kChatML;
    if (name == "llama3") return kLlama3;
    if (name == "llama2") return kLlama2;
    return {};
}

nlohmann::ordered_json messages_json(std::span<const ChatMessage> messages) {
    auto out = nlohmann::ordered_json::array();
    for (const ChatMessage& m : messages) out.push_back({{"role", m.role}, {"content", m.content}});
    return out;
}

}  // namespace

std::string special_token_text(const Tokenizer& tokenizer, int32_t id) {
    return id < 0 || static_cast<size_t>(id) >= tokenizer.n_vocab() ? "" : tokenizer.token_text(id);
}

ChatTemplate ChatTemplate::from_source(std::string_view source, std::string bos_token,
                                       std::string eos_token, std::string origin) {
    ChatTemplate t;
    const std::string_view builtin = builtin_source(source);
    if (!builtin.empty()) origin = "built-in " + std::string(source);
    try {
        t.template_ = std::make_shared<const tmpl::Template>(builtin.empty() ? source : builtin);
    } catch (const tmpl::TemplateError& e) {
        fail("the {} chat template does not parse: {}", origin, e.what());
    }
    t.bos_token_ = std::move(bos_token);
    t.eos_token_ = std::move(eos_token);
    t.origin_ = std::move(origin);
    t.source_ = builtin.empty() ? source : builtin;
    return t;
}

ChatTemplate ChatTemplate::from_gguf(const GgufFile& file, const Tokenizer& tokenizer) {
    std::string bos = special_token_text(tokenizer, tokenizer.bos());
    std::string eos = special_token_text(tokenizer, tokenizer.eos());
    if (std::optional<std::string_view> source = file.get_string("tokenizer.chat_template"))
        return from_source(*source, std::move(bos), std::move(eos), "model's");
    ChatTemplate t = from_source("chatml", std::move(bos), std::move(eos));
    t.fallback_ = true;
    return t;
}

ChatTemplate ChatTemplate::resolve(const std::string& flag, const GgufFile& file,
                                   const Tokenizer& tokenizer) {
    if (flag.empty()) return from_gguf(file, tokenizer);
    const std::string bos = special_token_text(tokenizer, tokenizer.bos());
    const std::string eos = special_token_text(tokenizer, tokenizer.eos());
    if (!builtin_source(flag).empty()) return from_source(flag, bos, eos);
    return from_source(read_text_file(flag, "chat template file"), bos, eos, "'" + flag + "'");
}

std::string ChatTemplate::render(std::span<const ChatMessage> messages,
                                 bool add_generation_prompt) const {
    return render(messages_json(messages), add_generation_prompt);
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                 const ChatRequestContext& request) const {
    nlohmann::ordered_json context = {{"messages", messages},
                                      {"add_generation_prompt", add_generation_prompt},
                                      {"bos_token", bos_token_},
                                      {"eos_token", eos_token_}};
    if (!request.tools.is_null()) context["tools"] = request.tools;
    if (!request.tool_choice.is_null()) context["tool_choice"] = request.tool_choice;
    try {
        return template_->render_json(context);
    } catch (const tmpl::TemplateError& e) {
        // One line: a template's own message may span several.
        std::string message = e.what();
        for (char& c : message)
            if (c == '\n') c = ' ';
        fail("the {} chat template failed: {}", origin_, message);
    }
}

std::vector<int32_t> ChatTemplate::tokenize(const Tokenizer& tokenizer,
                                            const std::string& prompt) const {
    const bool wrote_bos = !bos_token_.empty() && prompt.starts_with(bos_token_);
    return tokenizer.encode(prompt, !wrote_bos, true);
}

}  // namespace kite
