// BERT's basic tokenizer, the stage before WordPiece: drops control characters, optionally
// lower-cases and strips accents, splits on whitespace, and makes every punctuation mark and
// CJK ideograph a word of its own.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kite {

struct BertNormalization {
    bool lowercase = true;
    bool strip_accents = true;
};

// The words of `text`, in order. Bytes that are not valid UTF-8 are dropped, as are NUL,
// U+FFFD and format/control characters.
std::vector<std::string> bert_words(std::string_view text, BertNormalization options);

}  // namespace kite
