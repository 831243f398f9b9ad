// How SentencePiece-style vocabularies spell text: a space is U+2581 ("▁"), other characters
// are raw UTF-8, and a byte without a token of its own is a <0xXX> byte token. Shared by the
// score-based SentencePiece model ("llama") and the merge-based one ("gemma4").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "tokenizer/vocab.h"

namespace kite {

inline constexpr std::string_view kSentencePieceSpace = "\xE2\x96\x81";  // U+2581

// `text` with every space spelled as U+2581, and one more in front when `add_prefix`.
std::string escape_spaces(std::string_view text, bool add_prefix);

// The id of <0xXX> for each byte; kNoToken where the vocabulary has none.
std::array<int32_t, 256> byte_token_ids(const Vocab& vocab);

// Appends the bytes token `id` stands for: the byte of a <0xXX> byte token, else the token's
// text with U+2581 turned back into spaces.
void append_sentencepiece_bytes(const Vocab& vocab, int32_t id, std::string& out);

}  // namespace kite
