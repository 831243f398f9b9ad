// Decoding tokens as they are generated: a character can be split across tokens (byte
// tokens, or byte-level BPE pieces of an emoji), so the decoder holds back an incomplete
// UTF-8 sequence until the token that completes it arrives, and only ever emits valid UTF-8.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace kite {

class StreamingDecoder {
  public:
    // `tokenizer` must outlive the decoder. `render_special` as in Tokenizer::decode().
    explicit StreamingDecoder(const Tokenizer& tokenizer, bool render_special = true);

    // Decodes one more token and returns the text it completes (valid UTF-8, maybe empty).
    // Bytes that can never become valid UTF-8 come out as U+FFFD. For a sequence whose
    // decode() is valid UTF-8, the outputs of push() and finish() concatenate to exactly it.
    std::string push(int32_t id);

    // Ends the stream: returns what was held back, an unfinished character as U+FFFD.
    std::string finish();

    // Starts a new, independent stream.
    void reset();

  private:
    std::string take_valid(bool at_end);

    const Tokenizer& tokenizer_;
    bool render_special_;
    Tokenizer::DecodeState state_;
    std::string pending_;  // decoded bytes not yet returned
};

}  // namespace kite
