#include "tokenizer/bpe_model.h"

#include <algorithm>

#include "core/utf8.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/sentencepiece_spelling.h"

namespace kite {

namespace {

uint64_t pair_key(int32_t left, int32_t right) {
    return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
}

// A candidate merge of two adjacent symbols; stale once either symbol has changed.
struct Candidate {
    int32_t rank;
    int32_t left, right;  // symbol indices
    int32_t left_id, right_id, result;
};

// Lowest rank first; among equal ranks the leftmost pair, as the reference does.
struct LaterCandidate {
    bool operator()(const Candidate& a, const Candidate& b) const {
        return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
    }
};

constexpr int32_t kMerged = -2;  // id of a symbol absorbed into its left neighbour

// Control and unknown tokens never come out of plain text.
bool usable_as_text(const Vocab& v, int32_t id) {
    return id != kNoToken && v.type(id) != TokenType::Control && v.type(id) != TokenType::Unknown;
}

}  // namespace

BpeModel::BpeModel(const Vocab& vocab)
    : vocab_(vocab),
      byte_level_(vocab.kind == VocabKind::BytePairBpe),
      pre_tokenizer_(vocab.pre),
      n_vocab_(int32_t(vocab.size())) {
    build_merges();
    if (!byte_level_) byte_token_ = byte_token_ids(vocab);
}

// Symbols are token ids; strings that only exist halfway through merges get ids above the
// vocabulary so that every merge is a lookup of two integers.
int32_t BpeModel::intern(const std::string& text) {
    const int32_t id = vocab_.find(text);
    if (usable_as_text(vocab_, id)) return id;
    auto [it, added] = merge_only_.emplace(text, n_vocab_ + int32_t(merge_only_.size()));
    return it->second;
}

// The symbol of a string, kNoToken when neither the vocabulary nor the merges know it.
int32_t BpeModel::symbol_of(std::string_view text) const {
    const int32_t id = vocab_.find(text);
    if (usable_as_text(vocab_, id)) return id;
    const auto found = merge_only_.find(text);
    return found != merge_only_.end() ? found->second : kNoToken;
}

void BpeModel::build_merges() {
    merges_.reserve(vocab_.merges.size());
    for (size_t rank = 0; rank < vocab_.merges.size(); ++rank) {
        const std::string& m = vocab_.merges[rank];
        const size_t space = m.find(' ', 1);  // load_vocab() checked the format
        const std::string left = m.substr(0, space), right = m.substr(space + 1);
        const int32_t l = intern(left), r = intern(right);
        const int32_t result = intern(left + right);
        merges_.emplace(pair_key(l, r), Merge{int32_t(rank), result});  // first rank wins
    }
    for (int b = 0; b < 256; ++b) byte_symbol_[size_t(b)] = symbol_of(byte_to_unicode(uint8_t(b)));
}

const BpeModel::Merge* BpeModel::find_merge(int32_t left, int32_t right) const {
    if (left < 0 || right < 0) return nullptr;
    auto it = merges_.find(pair_key(left, right));
    return it == merges_.end() ? nullptr : &it->second;
}

void BpeModel::encode(std::string_view text, bool /*starts_text*/,
                      std::vector<int32_t>& out) const {
    std::vector<Symbol> symbols;
    const std::string escaped = byte_level_ ? std::string() : escape_spaces(text, false);
    for (std::string_view piece : pre_tokenizer_.split(byte_level_ ? text : escaped))
        if (!encode_whole(piece, out)) encode_piece(piece, symbols, out);
}

// Some reference tokenizers take a piece that is a token as it is, even where the merges
// would split it differently (see PreTokenizer::WholePieces).
bool BpeModel::encode_whole(std::string_view piece, std::vector<int32_t>& out) const {
    using WholePieces = PreTokenizer::WholePieces;
    const WholePieces rule = pre_tokenizer_.whole_pieces();
    if (rule == WholePieces::Never) return false;
    if (rule == WholePieces::NewlineRuns && piece.find_first_not_of('\n') != std::string_view::npos)
        return false;
    const int32_t id = vocab_.find(byte_level_ ? bytes_to_unicode(piece) : std::string(piece));
    if (!usable_as_text(vocab_, id)) return false;
    out.push_back(id);
    return true;
}

// Byte-level: one symbol per byte. SentencePiece: one per UTF-8 character (an invalid byte
// alone), with kNoToken for a character neither the vocabulary nor the merges know.
void BpeModel::initial_symbols(std::string_view piece, std::vector<Symbol>& symbols) const {
    symbols.clear();
    for (uint32_t pos = 0; pos < piece.size();) {
        const uint32_t len =
            byte_level_ ? 1 : uint32_t(next_utf8_sequence(piece.substr(pos)).length);
        const int32_t id =
            byte_level_ ? byte_symbol_[uint8_t(piece[pos])] : symbol_of(piece.substr(pos, len));
        const auto index = int32_t(symbols.size());
        symbols.push_back({id, index - 1, index + 1, pos, pos + len});
        pos += len;
    }
    if (!symbols.empty()) symbols.back().next = -1;
}

void BpeModel::encode_piece(std::string_view piece, std::vector<Symbol>& symbols,
                            std::vector<int32_t>& out) const {
    initial_symbols(piece, symbols);
    const auto n = int32_t(symbols.size());
    std::vector<Candidate> queue;
    auto consider = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const int32_t l = symbols[size_t(left)].id, r = symbols[size_t(right)].id;
        if (const Merge* m = find_merge(l, r)) {
            queue.push_back({m->rank, left, right, l, r, m->result});
            std::push_heap(queue.begin(), queue.end(), LaterCandidate{});
        }
    };
    for (int32_t i = 1; i < n; ++i) consider(i - 1, i);

    while (!queue.empty()) {
        std::pop_heap(queue.begin(), queue.end(), LaterCandidate{});
        const Candidate c = queue.back();
        queue.pop_back();
        Symbol& left = symbols[size_t(c.left)];
        Symbol& right = symbols[size_t(c.right)];
        if (left.id != c.left_id || right.id != c.right_id || left.next != c.right) continue;
        left.id = c.result;
        left.end = right.end;
        left.next = right.next;
        if (right.next >= 0) symbols[size_t(right.next)].prev = c.left;
        right.id = kMerged;
        consider(left.prev, c.left);
        consider(c.left, left.next);
    }
    for (int32_t i = n > 0 ? 0 : -1; i >= 0; i = symbols[size_t(i)].next)
        emit(piece, symbols[size_t(i)], out);
}

// A symbol that is not a token (a string that only exists halfway through merges) falls back
// to the tokens of its single bytes. A byte the vocabulary cannot spell at all (SmolLM2 has
// no token for 0xFF, for one) is dropped, as llama.cpp and Hugging Face's tokenizers do; the
// unknown token of such vocabularies is often a control token that plain text must not make.
void BpeModel::emit(std::string_view piece, const Symbol& s, std::vector<int32_t>& out) const {
    if (s.id >= 0 && s.id < n_vocab_) {
        out.push_back(s.id);
        return;
    }
    for (uint32_t i = s.begin; i < s.end; ++i) {
        const uint8_t byte = uint8_t(piece[i]);
        const int32_t id = byte_level_ ? byte_symbol_[byte] : byte_token_[byte];
        if (id >= 0 && id < n_vocab_) out.push_back(id);
    }
}

void BpeModel::append_bytes(int32_t id, std::string& out) const {
    if (!byte_level_) {
        append_sentencepiece_bytes(vocab_, id, out);
        return;
    }
    std::string_view text = vocab_.tokens[size_t(id)];
    while (!text.empty()) {
        const Utf8Sequence seq = next_utf8_sequence(text);
        std::string_view unit = text.substr(0, seq.length);
        text.remove_prefix(seq.length);
        // A character outside the byte map (a vocabulary spelling raw text) stands for itself.
        std::optional<uint8_t> byte;
        if (seq.status == Utf8Status::Complete) byte = unicode_to_byte(decode_utf8(unit));
        if (byte)
            out += char(*byte);
        else
            out += unit;
    }
}

}  // namespace kite
