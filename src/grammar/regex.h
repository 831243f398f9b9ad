// Regular expressions (the common ECMAScript / Python subset JSON Schema patterns use) as
// grammar expressions: literals, ., classes with ranges and negation, \d \w \s and their
// negations, escapes (\t \n \xHH \uHHHH ...), groups (capturing, (?:), named), alternation,
// greedy or lazy quantifiers (* + ? {n} {n,} {n,m}), and ^ $ at the ends. Lookaround,
// backreferences, \b, \p{...} and flags throw GrammarError naming the construct.
//
// Every character becomes a Class node, so a caller can re-encode characters (JSON strings
// escape some). Where ECMAScript and Python (which JSON Schema validators use) differ, the
// narrower reading is taken: \d is [0-9] and \w [A-Za-z0-9_] (Python also matches other
// scripts' digits and letters), and their negations leave out every character Python might
// count as a digit or word character, so no string is accepted that either would reject.
#pragma once

#include <string_view>

#include "grammar/expr.h"

namespace kite::grammar {

enum class RegexMatch {
    Full,    // the whole string matches (a --regex constraint)
    Search,  // some part of the string matches, as JSON Schema's `pattern` (re.search)
};

// The pattern as written; a caller with patterns it did not write wraps the result in
// regular() (expr.h): a pattern may be ambiguous, (\w+\s?)+, which its automaton is not.
Expr regex_to_expr(std::string_view pattern, RegexMatch match);

}  // namespace kite::grammar
