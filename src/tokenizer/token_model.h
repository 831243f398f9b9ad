// The interface between the Tokenizer (special tokens, BOS/EOS, decoding state) and the
// algorithm that turns plain text into normal tokens and back (byte-level BPE or SPM).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kite {

class TokenModel {
  public:
    virtual ~TokenModel() = default;

    // Appends the ids of `text`, which holds no special tokens. `starts_text` is true at the
    // start of the input and right after a special token (SentencePiece adds a space there).
    virtual void encode(std::string_view text, bool starts_text,
                        std::vector<int32_t>& out) const = 0;

    // Appends the bytes a normal or byte token stands for.
    virtual void append_bytes(int32_t id, std::string& out) const = 0;

    // True when encode() adds a space where `starts_text` is set, so decoding removes it.
    virtual bool adds_space_prefix() const { return false; }
};

}  // namespace kite
