// A regular expression (an Expr without Refs) as the smallest deterministic automaton over
// bytes: Thompson's construction over the UTF-8 encodings of its classes, the subset
// construction, states that cannot reach an accepting one dropped, and Moore's refinement.
//
// The Earley matcher runs a regex lowered as written in one item per way of splitting the text
// so far: (\w+\s?)+ after n letters holds n items (each letter may end a word), and a searched
// pattern's .* prefix holds one per place the pattern may have begun. The automaton is in
// exactly one state after any text, so lowered as one rule per state (GrammarBuilder) it holds
// a fixed number of items however long the text grows.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "grammar/expr.h"

namespace kite::grammar {

struct ByteAutomaton {
    static constexpr int32_t kRejected = -1;
    // Per state: the state after each byte (kRejected: no text with this prefix matches).
    // State 0 is the start; every state can reach an accepting one.
    std::vector<std::array<int32_t, 256>> next;
    std::vector<uint8_t> accepting;

    size_t states() const { return next.size(); }
};

// Whether `e` lowered as written could leave the matcher one item per way of splitting the
// text: it has two unbounded loops (whose passes may trade characters, as the .* around a
// searched pattern does with a loop inside it), or a loop over more than one character class.
// Otherwise (counted repetitions, at most one loop of single characters) the written form
// runs in constant work per byte too, and is far smaller than the automaton of [a-z]{1,255}.
bool may_split_many_ways(const Expr& e);

// nullopt when `e` refers to a rule, matches nothing, or needs more than `max_states` states
// (counted repetitions multiply them: [a-z]{1,1000} is better left to nested optionals).
std::optional<ByteAutomaton> regular_automaton(const Expr& e, size_t max_states);

}  // namespace kite::grammar
