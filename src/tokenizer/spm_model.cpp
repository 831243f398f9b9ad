#include "tokenizer/spm_model.h"

#include <algorithm>

#include "core/utf8.h"
#include "tokenizer/sentencepiece_spelling.h"

namespace kite {

namespace {

struct Bigram {
    float score;
    int32_t left, right;
    uint32_t size;  // bytes of the merged text, to recognise stale entries
};

// Highest score first; among equal scores the leftmost pair.
struct LowerBigram {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score != b.score ? a.score < b.score : a.left > b.left;
    }
};

// Splits into characters; a byte that starts no valid character is a symbol of its own.
std::vector<SpmModel::Symbol> characters(std::string_view text) {
    std::vector<SpmModel::Symbol> symbols;
    uint32_t pos = 0;
    while (pos < text.size()) {
        const auto len = uint32_t(next_utf8_sequence(text.substr(pos)).length);
        const auto index = int32_t(symbols.size());
        symbols.push_back({index - 1, index + 1, pos, pos + len});
        pos += len;
    }
    if (!symbols.empty()) symbols.back().next = -1;
    return symbols;
}

}  // namespace

SpmModel::SpmModel(const Vocab& vocab) : vocab_(vocab), byte_tokens_(byte_token_ids(vocab)) {}

// Control and unknown tokens never come out of plain text.
int32_t SpmModel::text_token(std::string_view text) const {
    const int32_t id = vocab_.find(text);
    if (id == kNoToken) return kNoToken;
    const TokenType t = vocab_.type(id);
    return t == TokenType::Control || t == TokenType::Unknown ? kNoToken : id;
}

void SpmModel::encode(std::string_view raw, bool starts_text, std::vector<int32_t>& out) const {
    const std::string text = escape_spaces(raw, starts_text && vocab_.add_space_prefix);
    std::vector<Symbol> symbols = characters(text);
    std::vector<Bigram> queue;
    auto consider = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const Symbol& l = symbols[size_t(left)];
        const Symbol& r = symbols[size_t(right)];
        const int32_t id = text_token(std::string_view(text).substr(l.begin, r.end - l.begin));
        if (id == kNoToken) return;
        queue.push_back({vocab_.scores[size_t(id)], left, right, r.end - l.begin});
        std::push_heap(queue.begin(), queue.end(), LowerBigram{});
    };
    for (int32_t i = 1; i < int32_t(symbols.size()); ++i) consider(i - 1, i);

    while (!queue.empty()) {
        std::pop_heap(queue.begin(), queue.end(), LowerBigram{});
        const Bigram b = queue.back();
        queue.pop_back();
        Symbol& left = symbols[size_t(b.left)];
        Symbol& right = symbols[size_t(b.right)];
        const bool alive = left.end > left.begin && right.end > right.begin;
        if (!alive || left.next != b.right || right.end - left.begin != b.size) continue;
        left.end = right.end;
        left.next = right.next;
        if (right.next >= 0) symbols[size_t(right.next)].prev = b.left;
        right.end = right.begin;  // absorbed
        consider(left.prev, b.left);
        consider(b.left, left.next);
    }
    for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[size_t(i)].next) {
        const Symbol& s = symbols[size_t(i)];
        emit(std::string_view(text).substr(s.begin, s.end - s.begin), out);
    }
}

// A piece without a token is spelled with byte tokens, or the unknown token without them.
void SpmModel::emit(std::string_view piece, std::vector<int32_t>& out) const {
    if (const int32_t id = text_token(piece); id != kNoToken) {
        out.push_back(id);
        return;
    }
    bool unknown_added = false;
    for (char c : piece) {
        const int32_t id = byte_tokens_[uint8_t(c)];
        if (id != kNoToken) {
            out.push_back(id);
        } else if (vocab_.unknown != kNoToken && !unknown_added) {
            out.push_back(vocab_.unknown);  // one unknown token for the whole character
            unknown_added = true;
        }
    }
}

void SpmModel::append_bytes(int32_t id, std::string& out) const {
    append_sentencepiece_bytes(vocab_, id, out);
}

}  // namespace kite
