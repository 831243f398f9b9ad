// SentencePiece BPE ("llama" vocabularies): spaces become U+2581, the text starts as single
// characters, and the adjacent pair whose concatenation is the highest-scoring token merges
// first. Characters left without a token fall back to <0xXX> byte tokens.
#pragma once

#include <array>
#include <cstdint>

#include "tokenizer/token_model.h"
#include "tokenizer/vocab.h"

namespace kite {

class SpmModel final : public TokenModel {
  public:
    explicit SpmModel(const Vocab& vocab);  // `vocab` must outlive the model

    void encode(std::string_view text, bool starts_text, std::vector<int32_t>& out) const override;
    void append_bytes(int32_t id, std::string& out) const override;
    bool adds_space_prefix() const override { return vocab_.add_space_prefix; }

    struct Symbol {
        int32_t prev, next;
        uint32_t begin, end;  // bytes of the escaped text
    };

  private:
    int32_t text_token(std::string_view text) const;
    void emit(std::string_view text, std::vector<int32_t>& out) const;

    const Vocab& vocab_;
    std::array<int32_t, 256> byte_tokens_{};  // <0xXX> for each byte, or kNoToken
};

}  // namespace kite
