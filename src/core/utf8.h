// UTF-8 helpers the tokenizers share: sequence lengths, validation, encoding one code point.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kite {

// What starts at the front of a byte string.
enum class Utf8Status {
    Complete,    // a whole, valid sequence of `length` bytes
    Incomplete,  // a valid start that the string ends before finishing
    Invalid,     // bytes no valid UTF-8 text can hold here (`length` is 1)
};

struct Utf8Sequence {
    Utf8Status status = Utf8Status::Invalid;
    size_t length = 1;
};

// Examines the sequence at the start of `bytes` (which must not be empty). Strict: overlong
// forms, surrogates and code points above U+10FFFF are invalid.
Utf8Sequence next_utf8_sequence(std::string_view bytes);

// Length of the longest prefix of `bytes` that is valid UTF-8 text.
size_t valid_utf8_prefix(std::string_view bytes);

inline bool is_valid_utf8(std::string_view bytes) {
    return valid_utf8_prefix(bytes) == bytes.size();
}

// Appends the UTF-8 encoding of a code point (at most U+10FFFF).
void append_utf8(uint32_t code_point, std::string& out);

// Decodes a sequence that next_utf8_sequence() reported Complete.
uint32_t decode_utf8(std::string_view sequence);

}  // namespace kite
