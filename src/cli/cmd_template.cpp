// `kite template`: renders one chat context with a chat template and prints exactly the
// result, to check what a model will be prompted with.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/text_file.h"
#include "template/template.h"

namespace kite::cli {

namespace {

struct TemplateOptions {
    std::string model;
    std::string template_file;
    std::string context_file;
};

// A context needs a messages array of objects with a string role; the rest is the template's.
nlohmann::ordered_json read_context(const std::string& path) {
    const auto context =
        nlohmann::ordered_json::parse(read_text_file(path, "context file"), nullptr, false);
    if (context.is_discarded()) fail("the context file '{}' is not valid JSON", path);
    if (!context.is_object()) fail("the context file '{}' must hold a JSON object", path);
    const auto messages = context.find("messages");
    if (messages == context.end() || !messages->is_array())
        fail("the context file '{}' needs a 'messages' array", path);
    for (size_t i = 0; i < messages->size(); ++i) {
        const auto& m = (*messages)[i];
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
            fail("messages[{}] in '{}' needs a string 'role'", i, path);
    }
    return context;
}

void render(const TemplateOptions& o) {
    nlohmann::ordered_json context = read_context(o.context_file);
    std::string source;
    // The model supplies the template (unless a file does) and the BOS/EOS text.
    if (o.template_file.empty() || !o.model.empty()) {
        auto file = GgufFile::open(resolve_model_path(o.model));
        auto tokenizer = Tokenizer::from_gguf(*file);
        if (!context.contains("bos_token"))
            context["bos_token"] = special_token_text(*tokenizer, tokenizer->bos());
        if (!context.contains("eos_token"))
            context["eos_token"] = special_token_text(*tokenizer, tokenizer->eos());
        if (o.template_file.empty()) {
            auto s = file->get_string("tokenizer.chat_template");
            if (!s) fail("'{}' has no chat template (tokenizer.chat_template)", file->name());
            source = *s;
        }
    }
    if (!o.template_file.empty()) source = read_text_file(o.template_file, "template file");
    if (!context.contains("add_generation_prompt")) context["add_generation_prompt"] = false;
    std::string out;
    try {
        out = tmpl::Template(source).render_json(context);
    } catch (const tmpl::TemplateError& e) {
        std::string message = e.what();
        for (char& c : message)
            if (c == '\n') c = ' ';
        fail("template: {}", message);
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

void add_template_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "template", "Render a chat context (JSON) with a chat template and print the prompt");
    auto o = std::make_shared<TemplateOptions>();
    auto* m = cmd->add_option("-m,--model", o->model, "Model file whose template to use");
    cmd->add_option("--template", o->template_file, "Jinja template file (instead of a model's)");
    cmd->add_option("--context", o->context_file,
                    "JSON object: messages, add_generation_prompt, tools, bos_token, ...")
        ->required();
    (void)m;
    cmd->callback([o] { render(*o); });
}

}  // namespace kite::cli
