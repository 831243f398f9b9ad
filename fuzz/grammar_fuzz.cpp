// libFuzzer target: the grammar compilers on any bytes. The first byte picks the front end
// (JSON Schema, GBNF, regex); the text up to the first NUL is compiled, the rest fed to a
// matcher. Compilers must build a grammar or throw GrammarError (a schema that is not JSON: a
// JSON parse error); a crash, sanitizer report, hang or huge allocation is a bug. Every mask is
// computed twice, with the byte-run fast path and by the plain walk of the whole vocabulary
// (every string of 1 to 3 bytes over 16 bytes of JSON and UTF-8, with the fast paths, byte
// runs and the grouped walk, engaged wherever they apply), and the two must be equal. A
// JsonKeyGuard follows the same tokens: it may only take tokens out of a mask, never all.
// The shortest completion is 0 exactly where the matcher may stop, and each token
// keep_shortest keeps is allowed and brings it closer by the token's length; closing takes no
// more tokens than bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/gbnf.h"
#include "grammar/json_key_guard.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/regex.h"
#include "grammar/token_trie.h"
#include "grammar/tokenizer_vocab.h"

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

namespace {

kite::grammar::TokenizerVocab small_vocab() {
    const std::string bytes =
        "ab1-\":,{}[] \\\xc3\xa9"
        "e";
    std::vector<std::string> out;
    for (char x : bytes) {
        out.emplace_back(1, x);
        for (char y : bytes) {
            out.push_back(std::string{x, y});
            for (char z : bytes) out.push_back(std::string{x, y, z});
        }
    }
    return kite::grammar::tokenizer_vocab(std::move(out), {});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const kite::grammar::TokenizerVocab vocab = small_vocab();
    const kite::grammar::TokenTrie& trie = vocab.trie;
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
    kite::grammar::Matcher m(grammar), plain(grammar);
    m.set_fast_paths(true, 1);  // engage on any run, however few tokens it covers
    plain.set_fast_paths(false);
    kite::grammar::JsonKeyGuard guard(vocab, 0);
    std::vector<uint64_t> mask, plain_mask, guarded;
    kite::grammar::ClosingCache closing_cache;
    for (size_t i = 0; i < input.size(); i += 2) {
        m.allowed_tokens(trie, mask);
        plain.allowed_tokens(trie, plain_mask);
        if (mask != plain_mask) std::abort();  // the fast path disagrees with the plain walk
        guarded = mask;
        guard.filter(guarded);
        bool any = false, any_guarded = false;
        for (size_t w = 0; w < mask.size(); ++w) {
            if (guarded[w] & ~mask[w]) std::abort();  // the guard allowed a token
            any |= mask[w] != 0;
            any_guarded |= guarded[w] != 0;
        }
        if (any && !any_guarded) std::abort();  // the guard left nothing
        const uint64_t left = m.completion_length();
        if ((left == 0) != m.can_stop()) std::abort();
        std::vector<uint64_t> shortest = mask;
        m.keep_shortest(trie, shortest);
        for (size_t t = 0; t < vocab.bytes.size(); ++t) {
            if (!((shortest[t >> 6] >> (t & 63)) & 1)) continue;
            if (!((mask[t >> 6] >> (t & 63)) & 1)) std::abort();  // kept a refused token
            if (!m.advance(vocab.bytes[t])) std::abort();
            if (m.completion_length() + vocab.bytes[t].size() != left) std::abort();
            m.rollback(1);
        }
        // Closing's tokens are no more than its bytes (single bytes are tokens here, except
        // where the grammar needs a byte the vocabulary lacks), and counting them moves nothing.
        const size_t fed = m.tokens();
        const uint64_t closing = m.closing_tokens(trie, vocab.bytes, closing_cache, 64);
        if (m.tokens() != fed) std::abort();
        if (closing < 64 && closing > left) std::abort();
        if (!m.advance(input.substr(i, 2))) break;
        plain.advance(input.substr(i, 2));
        guard.feed(input.substr(i, 2));
    }
    (void)m.can_stop();
    if (m.tokens() > 0) m.rollback(1);
    return 0;
}
