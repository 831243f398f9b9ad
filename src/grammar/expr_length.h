// The lengths, in code points, of the strings an expression matches, and the expression cut
// down to the strings of a length range: minLength/maxLength beside a pattern.
#pragma once

#include <cstdint>
#include <optional>

#include "grammar/expr.h"

namespace kite::grammar {

struct LengthRange {
    uint64_t lo = 0;
    uint64_t hi = 0;  // kUnbounded or more: no limit
};

// Of an expression built from literals, classes, sequences, alternatives and repetitions
// (references are not followed: their length is unknown, [0, unbounded]).
LengthRange length_range(const Expr& e);

// The strings of `e` whose length is in [lo, hi] (hi kUnbounded: no limit), exactly; nullopt
// when that is not a simple cut (two parts of a sequence both vary in length, a repetition of
// a part that varies, a reference).
std::optional<Expr> restrict_length(const Expr& e, uint64_t lo, uint64_t hi);

}  // namespace kite::grammar
