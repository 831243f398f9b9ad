// `kite run`: generate text from a prompt, streamed as it is produced, then one line of
// timings on stderr.
#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "chat/chat_template.h"
#include "cli/chat_template_option.h"
#include "cli/commands.h"
#include "cli/constraint_option.h"
#include "cli/engine_options.h"
#include "core/error.h"
#include "core/text_file.h"

namespace kite::cli {

namespace {

struct RunOptions {
    EngineOptions engine;
    SpeculationOptions spec;
    SamplingOptions sampling;
    ConstraintOptions constraint;
    std::string prompt;
    std::string prompt_file;
    bool no_special = false;
    bool chat = false;
    std::string chat_template;
};

void run(const RunOptions& o) {
    const std::string prompt =
        o.prompt_file.empty() ? o.prompt : read_text_file(o.prompt_file, "prompt file");
    if (prompt.empty()) fail("the prompt is empty");
    if (o.chat) require_chat_template(resolve_model_path(o.engine.model));
    GenerationParams params = o.sampling.resolve();
    params.kv_window = o.engine.window();
    LoadedModel m = load_model(o.engine.model);
    params.constraint = o.constraint.compile(*m.tokenizer);
    // --chat sends the prompt as one user message through the model's chat template.
    std::vector<int32_t> tokens;
    if (o.chat) {
        const ChatTemplate tmpl =
            load_chat_template(o.chat_template, m.model->file(), *m.tokenizer);
        const std::vector<ChatMessage> messages{{"user", prompt}};
        tokens = tmpl.tokenize(*m.tokenizer, tmpl.render(messages, true));
    } else {
        tokens = m.tokenizer->encode(prompt, true, !o.no_special);
    }

    EngineConfig config = o.engine.engine_config(m.model->config(), 1);
    std::unique_ptr<Model> draft;
    config.speculation = o.spec.config(*m.model, draft);
    Engine engine(*m.model, *m.tokenizer, config);
    o.engine.check_window(engine, params.kv_window);
    o.engine.check_kv_budget(m.model->config(),
                             engine.most_cached(static_cast<int64_t>(tokens.size()), params),
                             "this sequence needs (its prompt and -n)");
    const auto start = std::chrono::steady_clock::now();
    const int64_t id = engine.submit(tokens, params);
    double ttft = -1;
    FinishReason finish = FinishReason::None;
    if (!o.chat) std::fputs(prompt.c_str(), stdout);
    std::fflush(stdout);
    while (engine.has_work()) {
        for (const TokenEvent& ev : engine.step()) {
            if (ev.seq_id != id) continue;
            if (ttft < 0)
                ttft =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            std::fwrite(ev.text.data(), 1, ev.text.size(), stdout);
            std::fflush(stdout);
            finish = ev.finish;
        }
    }
    if (is_error(finish)) fail("generation stopped: {}", finish_reason_name(finish));
    const Engine::Stats& s = engine.stats();
    const int64_t decoded = s.generated_tokens - 1;  // the first token comes from the prefill
    const std::string speculation =
        config.speculation.drafter == DrafterKind::None
            ? ""
            : fmt::format(
                  " | drafted {}, accepted {} ({:.1f}%)", s.drafted_tokens, s.accepted_tokens,
                  s.drafted_tokens > 0 ? 100.0 * s.accepted_tokens / s.drafted_tokens : 0.0);
    fmt::print(
        stderr,
        "\n[stopped: {}] prompt {} tokens, {:.1f} tok/s | generated {} tokens, {:.1f} tok/s{} | "
        "time to first token {:.0f} ms | {} threads\n",
        finish_reason_name(finish), s.prompt_tokens,
        s.prompt_seconds > 0 ? s.prompt_tokens / s.prompt_seconds : 0.0, s.generated_tokens,
        s.decode_seconds > 0 ? decoded / s.decode_seconds : 0.0, speculation, ttft * 1000,
        engine.threads());
}

}  // namespace

void add_run_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("run", "Generate text from a prompt");
    auto o = std::make_shared<RunOptions>();
    o->engine.add_to(*cmd);
    o->spec.add_to(*cmd);
    o->sampling.add_to(*cmd, 128);
    o->constraint.add_to(*cmd);
    auto* p = cmd->add_option("-p,--prompt", o->prompt, "The prompt");
    auto* f = cmd->add_option("-f,--file", o->prompt_file, "Read the prompt from a file");
    p->excludes(f);
    cmd->add_flag("--chat", o->chat,
                  "Send the prompt as a user message in the model's chat template");
    add_chat_template_option(*cmd, o->chat_template);
    cmd->add_flag("--no-special", o->no_special,
                  "Treat special-token text in the prompt as plain text");
    cmd->callback([o, p, f] {
        if (p->count() == 0 && f->count() == 0) fail("give a prompt with -p TEXT or -f FILE");
        run(*o);
    });
}

}  // namespace kite::cli
