#include "tokenizer/wordpiece_model.h"

#include <algorithm>

#include "tokenizer/sentencepiece_spelling.h"

namespace kite {

WordPieceModel::WordPieceModel(const Vocab& vocab)
    : vocab_(vocab), normalization_{vocab.lowercase, vocab.strip_accents} {
    for (const std::string& t : vocab.tokens) longest_token_ = std::max(longest_token_, t.size());
}

void WordPieceModel::encode(std::string_view text, bool, std::vector<int32_t>& out) const {
    for (const std::string& word : bert_words(text, normalization_)) encode_word(word, out);
}

// Greedy longest match from the left; if any position has no match, the whole word is unknown.
void WordPieceModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
    const std::string marked = std::string(kSentencePieceSpace) + std::string(word);
    const std::string_view w = marked;
    const size_t first = out.size();
    for (size_t i = 0; i < w.size();) {
        int32_t id = kNoToken;
        size_t end = std::min(w.size(), i + longest_token_);
        for (; end > i; --end)
            if ((id = vocab_.find(w.substr(i, end - i))) != kNoToken) break;
        if (id == kNoToken) {
            out.resize(first);
            break;
        }
        out.push_back(id);
        i = end;
    }
    if (out.size() == first && vocab_.unknown != kNoToken) out.push_back(vocab_.unknown);
}

void WordPieceModel::append_bytes(int32_t id, std::string& out) const {
    const std::string_view piece = vocab_.tokens[size_t(id)];
    if (piece.starts_with(kSentencePieceSpace)) {
        out += ' ';
        out += piece.substr(kSentencePieceSpace.size());
    } else {
        out += piece;
    }
}

}  // namespace kite
