// libFuzzer target: any bytes as a chat template, rendered with a small conversation, must
// render or raise kite::tmpl::TemplateError; a crash, sanitizer report, hang or huge
// allocation is a bug. The limits are tightened so each input stays fast.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "template/template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const nlohmann::ordered_json context = nlohmann::ordered_json::parse(R"({
        "messages": [{"role": "system", "content": "Be brief."},
                     {"role": "user", "content": "Hi {{ x }}"},
                     {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
                      "function": {"name": "f", "arguments": {"a": 1}}}]},
                     {"role": "tool", "content": "42"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
    kite::tmpl::RenderOptions options;
    options.limits.max_output_bytes = 1 << 20;
    options.limits.max_iterations = 20000;
    options.limits.max_call_depth = 40;
    options.now = 0;
    try {
        kite::tmpl::Template t(std::string_view(reinterpret_cast<const char*>(data), size));
        (void)t.render_json(context, options);
    } catch (const kite::tmpl::TemplateError&) {
    }
    return 0;
}
