// --chat-template for the commands that chat (run --chat, chat, serve).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "chat/chat_template.h"

namespace kite::cli {

void add_chat_template_option(CLI::App& cmd, std::string& flag);
// The template to use (see ChatTemplate::resolve); says once on stderr when the model file
// has none and a built-in format stands in.
ChatTemplate load_chat_template(const std::string& flag, const GgufFile& file,
                                const Tokenizer& tokenizer);

}  // namespace kite::cli
