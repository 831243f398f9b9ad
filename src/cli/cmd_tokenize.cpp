// `kite tokenize`: placeholder until the tokenizer lands.
#include "cli/commands.h"

namespace kite::cli {

void add_tokenize_command(CLI::App& app) {
    app.add_subcommand("tokenize", "Split text into tokens (not implemented yet)");
}

}  // namespace kite::cli
