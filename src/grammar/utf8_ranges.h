// Code point ranges as UTF-8 byte patterns: each range becomes a few sequences of byte ranges
// (e.g. U+0080..U+07FF is [C2-DF][80-BF]), so a byte-level matcher accepts exactly the
// encodings of the code points in the range. Surrogates (U+D800..U+DFFF) are left out.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/expr.h"

namespace kite::grammar {

struct ByteRange {
    uint8_t lo = 0;
    uint8_t hi = 0;
};

using ByteSequence = std::vector<ByteRange>;  // one byte range per byte of the encoding

std::vector<ByteSequence> utf8_sequences(const std::vector<CodeRange>& ranges);

}  // namespace kite::grammar
