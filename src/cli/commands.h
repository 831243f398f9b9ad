// The `kite` subcommands; each file cmd_*.cpp adds one to the app.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "model/model_path.h"

namespace kite::cli {

void add_info_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_embed_command(CLI::App& app);
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

// Throws kite::Error saying why a model without a chat template (a base model) cannot chat.
void require_chat_template(const std::string& model_path);

}  // namespace kite::cli
