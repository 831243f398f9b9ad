// libFuzzer target: the grammar compilers on any bytes. The first byte picks the front end
// (JSON Schema, GBNF, regex); the text up to the first NUL is compiled, the rest fed to a
// matcher with a small vocabulary's mask. Compilers must build a grammar or throw
// GrammarError (a schema that is not JSON: a JSON parse error); a crash, sanitizer report,
// hang or huge allocation is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/regex.h"
#include "grammar/token_trie.h"

namespace {

using kite::grammar::Grammar;

std::shared_ptr<const Grammar> compile(uint8_t kind, std::string_view text) {
    switch (kind % 3) {
        case 0:
            return kite::grammar::compile_json_schema(nlohmann::ordered_json::parse(text));
        case 1:
            return kite::grammar::compile_gbnf(text);
        default: {
            kite::grammar::GrammarBuilder b;
            b.define("root", kite::grammar::regex_to_expr(text, kite::grammar::RegexMatch::Full));
            return b.build("root");
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::vector<std::string> vocab = {"{", "}", "\"", "a",   "1",    ":",        ",",
                                                   "[", "]", "ab", "\":", "true", "\xc3\xa9", " "};
    static const kite::grammar::TokenTrie trie(vocab, {});
    if (size == 0) return 0;
    const std::string_view all(reinterpret_cast<const char*>(data) + 1, size - 1);
    const size_t nul = all.find('\0');
    const std::string_view text = all.substr(0, nul);
    const std::string_view input = nul == std::string_view::npos ? "" : all.substr(nul + 1);
    std::shared_ptr<const Grammar> grammar;
    try {
        grammar = compile(data[0], text);
    } catch (const kite::grammar::GrammarError&) {
        return 0;
    } catch (const nlohmann::json::exception&) {
        return 0;
    }
    kite::grammar::Matcher m(grammar);
    std::vector<uint64_t> mask;
    for (size_t i = 0; i < input.size(); i += 2) {
        m.allowed_tokens(trie, mask);
        if (!m.advance(input.substr(i, 2))) break;
    }
    (void)m.can_stop();
    if (m.tokens() > 0) m.rollback(1);
    return 0;
}
