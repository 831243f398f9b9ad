#include "grammar/tokenizer_vocab.h"

#include "tokenizer/tokenizer.h"

namespace kite::grammar {

namespace {

std::vector<std::string> token_bytes_of(const Tokenizer& tok) {
    std::vector<std::string> bytes(tok.n_vocab());
    for (size_t t = 0; t < bytes.size(); ++t) {
        const auto id = static_cast<int32_t>(t);
        if (!tok.is_special(id)) bytes[t] = tok.token_text(id);
    }
    return bytes;
}

std::vector<int32_t> stop_tokens_of(const Tokenizer& tok) {
    std::vector<int32_t> out;
    for (size_t t = 0; t < tok.n_vocab(); ++t)
        if (tok.is_end_of_generation(static_cast<int32_t>(t)))
            out.push_back(static_cast<int32_t>(t));
    return out;
}

}  // namespace

TokenizerVocab tokenizer_vocab(const Tokenizer& tok) {
    return tokenizer_vocab(token_bytes_of(tok), stop_tokens_of(tok));
}

TokenizerVocab tokenizer_vocab(std::vector<std::string> bytes, const std::vector<int32_t>& stops) {
    TokenTrie trie(bytes, stops);
    std::vector<int32_t> quote_tokens;
    for (size_t t = 0; t < bytes.size(); ++t)
        if (bytes[t].find('"') != std::string::npos)
            quote_tokens.push_back(static_cast<int32_t>(t));
    return {std::move(bytes), std::move(trie), std::move(quote_tokens)};
}

}  // namespace kite::grammar
