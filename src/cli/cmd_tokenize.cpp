// `kite tokenize`: the tokens a model's tokenizer makes of a text, one per line, or the ids
// as a JSON array.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/text_file.h"
#include "core/utf8.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace kite::cli {

namespace {

struct TokenizeOptions {
    std::string model;
    std::string text;
    std::string file;
    bool ids_only = false;
    bool no_special = false;
};

// One character of a token for display: control characters, quotes and backslashes escaped.
void append_escaped(uint32_t cp, std::string_view utf8, std::string& out) {
    switch (cp) {
        case '\n':
            out += "\\n";
            return;
        case '\t':
            out += "\\t";
            return;
        case '\r':
            out += "\\r";
            return;
        case '\\':
            out += "\\\\";
            return;
        case '\'':
            out += "\\'";
            return;
        default:
            break;
    }
    if (cp < 0x20 || cp == 0x7F)
        out += fmt::format("\\x{:02x}", cp);
    else if (cp >= 0x80 && cp < 0xA0)  // C1 controls
        out += fmt::format("\\u{:04x}", cp);
    else
        out += utf8;
}

// A token's bytes for display; bytes that are not (yet) valid UTF-8, such as one byte of a
// multi-byte character, are shown as \xNN.
std::string escape(std::string_view bytes) {
    std::string out;
    while (!bytes.empty()) {
        const Utf8Sequence seq = next_utf8_sequence(bytes);
        if (seq.status == Utf8Status::Complete) {
            append_escaped(decode_utf8(bytes.substr(0, seq.length)), bytes.substr(0, seq.length),
                           out);
            bytes.remove_prefix(seq.length);
        } else {
            out += fmt::format("\\x{:02x}", static_cast<uint8_t>(bytes[0]));
            bytes.remove_prefix(1);
        }
    }
    return out;
}

std::string format_ids(const std::vector<int32_t>& ids) {
    return fmt::format("[{}]\n", fmt::join(ids, ", "));
}

std::string format_tokens(const Tokenizer& tok, const std::vector<int32_t>& ids) {
    std::string out;
    for (int32_t id : ids) out += fmt::format("{}\t'{}'\n", id, escape(tok.token_text(id)));
    return out;
}

void run_tokenize(const TokenizeOptions& o) {
    const std::string text = o.file.empty() ? o.text : read_text_file(o.file, "input file");
    const std::unique_ptr<GgufFile> file = GgufFile::open(resolve_model_path(o.model));
    const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(*file);
    const bool special = !o.no_special;
    const std::vector<int32_t> ids = tok->encode(text, special, special);
    const std::string out = o.ids_only ? format_ids(ids) : format_tokens(*tok, ids);
    std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("tokenize", "Split text into tokens with a model's tokenizer");
    auto o = std::make_shared<TokenizeOptions>();
    cmd->add_option("-m,--model", o->model,
                    "GGUF model file (default: the installed default model)");
    cmd->add_flag("--ids", o->ids_only, "Print only the ids, as one JSON array");
    cmd->add_flag("--no-special", o->no_special,
                  "Tokenize special-token text as plain text and add no BOS/EOS");
    auto* text = cmd->add_option("text", o->text, "The text to tokenize");
    auto* file = cmd->add_option("-f,--file", o->file, "Read the text from this file instead");
    text->excludes(file);
    cmd->callback([o, text, file] {
        if (!*text && !*file) throw CLI::RequiredError("TEXT or --file");
        run_tokenize(*o);
    });
}

}  // namespace kite::cli
