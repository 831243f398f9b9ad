#include "cli/chat_template_option.h"

#include <fmt/format.h>

namespace kite::cli {

void add_chat_template_option(CLI::App& cmd, std::string& flag) {
    cmd.add_option("--chat-template", flag,
                   "Jinja chat template file to use instead of the model's (or a built-in "
                   "format: chatml, llama3, llama2)");
}

ChatTemplate load_chat_template(const std::string& flag, const GgufFile& file,
                                const Tokenizer& tokenizer) {
    ChatTemplate t = ChatTemplate::resolve(flag, file, tokenizer);
    if (t.fallback())
        fmt::print(stderr,
                   "kite: '{}' has no chat template (tokenizer.chat_template); using the {} "
                   "format\n",
                   file.name(), t.origin());
    return t;
}

}  // namespace kite::cli
