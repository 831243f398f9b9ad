// WordPiece (BERT vocabularies, tokenizer.ggml.model "bert"): the text is split into words
// by BERT's basic tokenizer, and each word is spelled greedily, longest vocabulary entry
// first. A word that cannot be spelled completely becomes the unknown token.
//
// GGUF stores the vocabulary as llama.cpp's converter writes it: a piece that starts a word
// carries U+2581 in front ("▁the"), a continuation is stored bare ("ing", BERT's "##ing").
#pragma once

#include <cstddef>

#include "tokenizer/bert_pre_tokenizer.h"
#include "tokenizer/token_model.h"
#include "tokenizer/vocab.h"

namespace kite {

class WordPieceModel final : public TokenModel {
  public:
    explicit WordPieceModel(const Vocab& vocab);  // `vocab` must outlive the model

    void encode(std::string_view text, bool starts_text, std::vector<int32_t>& out) const override;
    void append_bytes(int32_t id, std::string& out) const override;
    // Every word starts with a space when decoded; the one at the start of the text goes.
    bool adds_space_prefix() const override { return true; }

  private:
    void encode_word(std::string_view word, std::vector<int32_t>& out) const;

    const Vocab& vocab_;
    BertNormalization normalization_;
    size_t longest_token_ = 0;  // bytes
};

}  // namespace kite
