// kite: the command-line entry point. Exit codes: 0 ok, 1 bad input or failure, 2 bad usage.
#include <cstdio>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/version.h"
#include "core/error.h"

int main(int argc, char** argv) {
    CLI::App app{"Kite: an LLM inference engine", "kite"};
    app.require_subcommand(1);
    app.set_version_flag("--version", kite::cli::version_text,
                         "Print the version, commit, compiler and kernel level, and exit");
    kite::cli::add_info_command(app);
    kite::cli::add_tokenize_command(app);
    kite::cli::add_embed_command(app);
    kite::cli::add_run_command(app);
    kite::cli::add_chat_command(app);
    kite::cli::add_perplexity_command(app);
    kite::cli::add_quantize_command(app);
    kite::cli::add_roofline_command(app);
    kite::cli::add_bench_command(app);
    kite::cli::add_serve_command(app);
    kite::cli::add_plan_command(app);
    kite::cli::add_template_command(app);
    kite::cli::add_models_command(app);
    kite::cli::add_structured_command(app);
    // CLI11 would only say "a subcommand is required"; name the word it did not know.
    std::string known;
    bool is_known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
        known += (known.empty() ? "" : ", ") + sub->get_name();
        is_known |= argc > 1 && sub->get_name() == argv[1];
    }
    if (argc > 1 && argv[1][0] != '-' && !is_known) {
        std::fprintf(stderr, "kite: unknown command '%s' (commands: %s)\n", argv[1], known.c_str());
        return 2;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        std::fputs(e.what(), stdout);  // the text ends in a newline; app.exit would add one
        return 0;
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "kite: %s (see kite --help)\n", e.what());
        return 2;
    } catch (const kite::Error& e) {
        std::fprintf(stderr, "kite: error: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kite: internal error: %s\n", e.what());
        return 1;
    }
    return 0;
}
