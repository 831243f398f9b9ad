// BPE by merge ranks: the pre-tokenizer regexes split the text, each piece starts as single
// symbols, then adjacent symbols are merged, lowest merge rank first, until no ranked pair is
// left. Two spellings of the text:
// - byte-level ("gpt2" vocabularies): every byte is a GPT-2 byte character, so each byte
//   starts as a symbol of its own;
// - SentencePiece ("gemma4"): spaces are U+2581, each UTF-8 character starts as a symbol, and
//   what has no token falls back to <0xXX> byte tokens.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/token_model.h"
#include "tokenizer/vocab.h"

namespace kite {

class BpeModel final : public TokenModel {
  public:
    // `vocab` must outlive the model. Throws kite::Error for an unknown pre-tokenizer.
    explicit BpeModel(const Vocab& vocab);

    void encode(std::string_view text, bool starts_text, std::vector<int32_t>& out) const override;
    void append_bytes(int32_t id, std::string& out) const override;

    struct Symbol {
        int32_t id;           // token id, an id above the vocabulary for merge-only strings
        int32_t prev, next;   // neighbours in the piece (-1 at the ends)
        uint32_t begin, end;  // the bytes of the piece it spells
    };
    struct Merge {
        int32_t rank;
        int32_t result;
    };

  private:
    int32_t intern(const std::string& text);
    int32_t symbol_of(std::string_view text) const;
    void build_merges();
    void initial_symbols(std::string_view piece, std::vector<Symbol>& symbols) const;
    void encode_piece(std::string_view piece, std::vector<Symbol>& symbols,
                      std::vector<int32_t>& out) const;
    bool encode_whole(std::string_view piece, std::vector<int32_t>& out) const;
    void emit(std::string_view piece, const Symbol& s, std::vector<int32_t>& out) const;
    const Merge* find_merge(int32_t left, int32_t right) const;

    const Vocab& vocab_;
    const bool byte_level_;  // false: SentencePiece spelling
    PreTokenizer pre_tokenizer_;
    std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rank and result
    // Strings that only exist halfway through merges, with their ids above the vocabulary.
    std::unordered_map<std::string, int32_t, Vocab::Hash, std::equal_to<>> merge_only_;
    std::array<int32_t, 256> byte_symbol_{};  // byte-level: the symbol each byte starts as
    std::array<int32_t, 256> byte_token_{};   // SentencePiece: the <0xXX> token of each byte
    int32_t n_vocab_ = 0;
};

}  // namespace kite
