// `kite chat`: a multi-turn conversation on stdin/stdout using the model's chat template.
// Each turn reuses the KV cache of the earlier ones. A conversation longer than the context
// goes on with attention sinks and a sliding window (kv/kv_window.h) unless --kv-window says
// otherwise: the widest window the cache holds, so nothing is evicted before it is full.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include <fmt/format.h>

#include "cli/chat_template_option.h"
#include "cli/commands.h"
#include "cli/constraint_option.h"
#include "cli/engine_options.h"
#include "engine/chat_session.h"

namespace kite::cli {

namespace {

struct ChatOptions {
    EngineOptions engine;
    SpeculationOptions spec;
    SamplingOptions sampling;
    ConstraintOptions constraint;
    std::string system;
    std::string chat_template;
};

void chat(const ChatOptions& o) {
    require_chat_template(resolve_model_path(o.engine.model));
    LoadedModel m = load_model(o.engine.model);
    ChatTemplate tmpl = load_chat_template(o.chat_template, m.model->file(), *m.tokenizer);
    (void)o.engine.window();  // bad window flags stop it before the engine allocates
    EngineConfig config = o.engine.engine_config(m.model->config(), 1);
    std::unique_ptr<Model> draft;
    config.speculation = o.spec.config(*m.model, draft);
    Engine engine(*m.model, *m.tokenizer, config);
    ChatSession session(engine, *m.tokenizer, tmpl, o.system);
    GenerationParams params = o.sampling.resolve();
    params.constraint = o.constraint.compile(*m.tokenizer);
    params.kv_window =
        o.engine.kv_window ? o.engine.window() : engine.widest_window(EngineOptions::kDefaultSinks);
    o.engine.check_window(engine, params.kv_window);
    bool told = false;  // about the window, once
    const auto on_text = [&](const std::string& text) {
        if (!told && session.evicted_tokens() > 0) {
            told = true;
            fmt::print(stderr,
                       "\n[the conversation is longer than the context of {} tokens: keeping its "
                       "first {} and last {} or more (attention sinks and a sliding window; "
                       "--kv-window 0 stops at the context instead)]\n",
                       engine.context_length(), params.kv_window.sinks, params.kv_window.window);
        }
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
    };
    const bool interactive = isatty(STDIN_FILENO);
    if (interactive)
        fmt::print(stderr, "kite chat ({} template, {} context). Type a message; Ctrl-D ends.\n",
                   tmpl.origin(), engine.context_length());
    std::string line;
    while (true) {
        if (interactive) fmt::print(stderr, "> ");
        if (!std::getline(std::cin, line)) break;
        if (line.empty()) continue;
        session.send(line, params, on_text);
        std::fputc('\n', stdout);
        const Engine::Stats& st = engine.stats();
        const std::string speculation = config.speculation.drafter == DrafterKind::None
                                            ? ""
                                            : fmt::format(" | drafted {}, accepted {} so far",
                                                          st.drafted_tokens, st.accepted_tokens);
        const std::string evicted = session.evicted_tokens() > 0
                                        ? fmt::format(", {} evicted", session.evicted_tokens())
                                        : "";
        fmt::print(stderr, "[{} | {} new prompt tokens | {} tokens in context{}{}]\n",
                   finish_reason_name(session.last_finish()), session.last_prompt_tokens(),
                   session.context_tokens(), evicted, speculation);
    }
}

}  // namespace

void add_chat_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("chat", "Chat with the model (reads messages from stdin)");
    auto o = std::make_shared<ChatOptions>();
    o->engine.add_to(*cmd);
    o->spec.add_to(*cmd);
    o->sampling.add_to(*cmd, 512);
    o->constraint.add_to(*cmd);
    add_chat_template_option(*cmd, o->chat_template);
    cmd->add_option("-s,--system", o->system,
                    "System message (default: the template's own, if any)");
    cmd->callback([o] { chat(*o); });
}

}  // namespace kite::cli
