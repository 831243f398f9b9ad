// Byte-level BPE ("gpt2" vocabularies): the pre-tokenizer regexes split the text, each
// piece is spelled as GPT-2 byte characters, then adjacent symbols are merged, lowest merge
// rank first, until no ranked pair is left.
#pragma once

#include <array>
#include <cstdint>
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
    int32_t intern(const std::string& text, std::unordered_map<std::string, int32_t>& extra);
    void build_merges();
    void encode_piece(std::string_view piece, std::vector<Symbol>& symbols,
                      std::vector<int32_t>& out) const;
    void emit(std::string_view piece, const Symbol& s, std::vector<int32_t>& out) const;
    const Merge* find_merge(int32_t left, int32_t right) const;

    const Vocab& vocab_;
    PreTokenizer pre_tokenizer_;
    std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rank and result
    std::array<int32_t, 256> byte_symbol_{};      // the symbol each byte starts as
    int32_t n_vocab_ = 0;
};

}  // namespace kite
