// Text <-> token ids for one model: the vocabulary's algorithm (byte-level BPE or
// SentencePiece) plus what sits around it: special tokens found in the text, BOS/EOS, and
// decoding ids back into the exact bytes they came from.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace kite {

class GgufFile;
class TokenModel;
class SpecialTokenSplitter;

class Tokenizer {
  public:
    // Reads the tokenizer.ggml.* metadata; throws kite::Error naming the file and the problem.
    static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& file);
    explicit Tokenizer(Vocab vocab);  // throws kite::Error for an unsupported pre-tokenizer
    ~Tokenizer();
    Tokenizer(const Tokenizer&) = delete;
    Tokenizer& operator=(const Tokenizer&) = delete;

    // `add_special`: add BOS/EOS as the metadata asks. `parse_special`: text spelling a control
    // token becomes that token (user-defined tokens are always recognised, as in the reference
    // tokenizers). Accepts any bytes; invalid UTF-8 is kept byte for byte.
    std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

    // The text of `ids`. Control tokens are rendered as their text when `render_special`, else
    // left out. The space a SentencePiece vocabulary adds at the start of the text and after
    // special tokens is removed, so decode(encode(x)) == x for text the vocabulary can spell.
    // Throws kite::Error for an id outside the vocabulary.
    std::string decode(std::span<const int32_t> ids, bool render_special = true) const;

    // What decoding needs to remember between tokens (for StreamingDecoder).
    struct DecodeState {
        bool starts_text = true;  // at the start, or right after a special token
    };
    // Appends the bytes of one token, as decode() would at this point of a sequence.
    void decode_token(int32_t id, DecodeState& state, std::string& out,
                      bool render_special = true) const;

    // The bytes of one token on its own (specials as their text, no space removed).
    std::string token_text(int32_t id) const;
    // The token's string as the vocabulary stores it (e.g. "Ġthe", "▁the", "<0x0A>").
    std::string_view piece(int32_t id) const;
    // The id whose vocabulary string is `piece`, or kNoToken.
    int32_t find_piece(std::string_view piece) const { return vocab_.find(piece); }

    int32_t bos() const { return vocab_.bos; }          // kNoToken when there is none
    int32_t eos() const { return vocab_.eos; }          // kNoToken when there is none
    int32_t unknown() const { return vocab_.unknown; }  // kNoToken when there is none
    bool adds_bos() const { return vocab_.add_bos; }
    bool adds_eos() const { return vocab_.add_eos; }
    bool is_end_of_generation(int32_t id) const;
    // Control, user-defined, unknown or unused: decoded from its text, not by the algorithm.
    bool is_special(int32_t id) const;
    size_t n_vocab() const { return vocab_.size(); }
    const Vocab& vocab() const { return vocab_; }

  private:
    void check_id(int32_t id) const;

    Vocab vocab_;
    std::unique_ptr<TokenModel> model_;
    std::unique_ptr<SpecialTokenSplitter> specials_;
};

}  // namespace kite
