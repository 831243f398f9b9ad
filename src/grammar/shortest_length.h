// The fewest bytes each part of a grammar can match, for closing an output early: the matcher
// adds them up along its open items to know how many bytes the shortest completion of the
// text so far takes (Matcher::completion_length).
#pragma once

#include <cstdint>

#include "grammar/grammar.h"

namespace kite::grammar {

// Lengths past this are "too long to matter" (they saturate here instead of overflowing).
constexpr uint64_t kLongest = uint64_t{1} << 60;

// a + b, saturating at kLongest.
inline uint64_t add_lengths(uint64_t a, uint64_t b) {
    return a >= kLongest || b >= kLongest || a + b >= kLongest ? kLongest : a + b;
}

// Fills g.rest_length and g.rule_of from g's flattened productions.
void add_rest_lengths(Grammar& g);

}  // namespace kite::grammar
