// A tokenizer's vocabulary as the grammar layer sees it: the bytes each token stands for
// (nothing for special tokens, which no grammar can spell) and the end-of-generation tokens,
// which are allowed exactly when the grammar may stop.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grammar/token_trie.h"

namespace kite {
class Tokenizer;
}

namespace kite::grammar {

struct TokenizerVocab {
    std::vector<std::string> bytes;
    TokenTrie trie;
    std::vector<int32_t> quote_tokens;  // tokens with a '"' byte: the only ones that end a string
};

TokenizerVocab tokenizer_vocab(const Tokenizer& tok);
// The vocabulary of these token bytes (what each id spells) and end-of-generation ids.
TokenizerVocab tokenizer_vocab(std::vector<std::string> bytes, const std::vector<int32_t>& stops);

}  // namespace kite::grammar
