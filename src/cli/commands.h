// The `kite` subcommands; each file cmd_*.cpp adds one to the app.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace kite::cli {

void add_info_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_perplexity_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_roofline_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_template_command(CLI::App& app);
void add_models_command(CLI::App& app);
void add_structured_command(CLI::App& app);

// The model to use: the -m flag (a path, or the name of a model installed as
// models/NAME.gguf), else $KITE_MODEL, else the default model installed by
// scripts/install-model.sh. Throws kite::Error with what to do when none is found.
std::string resolve_model_path(const std::string& flag);

// Throws kite::Error saying why a model without a chat template (a base model) cannot chat.
void require_chat_template(const std::string& model_path);

}  // namespace kite::cli
