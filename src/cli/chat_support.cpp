#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "gguf/gguf_file.h"

namespace kite::cli {

// Checked before the weights load, so that the answer comes at once and for any architecture.
void require_chat_template(const std::string& model_path) {
    const auto file = GgufFile::open(model_path);
    if (file->find("tokenizer.chat_template")) return;
    fail(
        "'{}' has no chat template (tokenizer.chat_template): it is a base model, which continues "
        "text rather than answering messages, so it cannot chat; use 'kite run' without --chat",
        model_path);
}

}  // namespace kite::cli
