// The grammar expressions every front end (JSON Schema, regex, GBNF) builds: sequences and
// alternatives of literal byte strings, code point classes, references to named rules and
// repetitions. GrammarBuilder lowers them to the flat byte-level Grammar the matcher runs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kite::grammar {

// An inclusive range of Unicode code points.
struct CodeRange {
    uint32_t lo = 0;
    uint32_t hi = 0;
};

inline constexpr uint32_t kUnbounded = UINT32_MAX;
inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

struct Expr {
    // Regular: items[0], a part without Refs that GrammarBuilder lowers as one deterministic
    // automaton (regular_automaton.h) where it can; the last item is lowered where it cannot.
    enum class Kind : uint8_t { Empty, Literal, Class, Ref, Seq, Alt, Repeat, Regular };
    Kind kind = Kind::Empty;
    std::string text;               // Literal: the bytes; Ref: the rule's name
    std::vector<CodeRange> ranges;  // Class: the code points it matches (sorted, disjoint)
    std::vector<Expr> items;        // Seq, Alt: the parts; Repeat, Regular: the one part
    uint32_t min = 0;               // Repeat: at least min times
    uint32_t max = 0;               // Repeat: at most max times (kUnbounded: no limit)
};

inline Expr empty() {
    return {};
}

inline Expr lit(std::string bytes) {
    Expr e;
    e.kind = Expr::Kind::Literal;
    e.text = std::move(bytes);
    return e;
}

inline Expr ref(std::string name) {
    Expr e;
    e.kind = Expr::Kind::Ref;
    e.text = std::move(name);
    return e;
}

// A class of the code points in `ranges` (any order, may overlap), or of all others when
// `negated` (surrogates are never matched: they are not characters in UTF-8).
Expr char_class(std::vector<CodeRange> ranges, bool negated = false);

Expr seq(std::vector<Expr> items);
Expr alt(std::vector<Expr> items);
Expr repeat(Expr item, uint32_t min, uint32_t max);
inline Expr opt(Expr item) {
    return repeat(std::move(item), 0, 1);
}
inline Expr star(Expr item) {
    return repeat(std::move(item), 0, kUnbounded);
}
inline Expr plus(Expr item) {
    return repeat(std::move(item), 1, kUnbounded);
}

// `item` (no Refs inside) lowered as a deterministic automaton: one rule per state, so that
// however ambiguous the expression (a regex's (\w+\s?)+, or the .* around a searched pattern),
// the matcher holds a fixed number of items per byte instead of one per way to split the text.
inline Expr regular(Expr item) {
    Expr e;
    e.kind = Expr::Kind::Regular;
    e.items.push_back(std::move(item));
    return e;
}

// The same, with the language as written (a GBNF rule with its references, rule_inlining.h)
// lowered instead where no automaton is built: written out, a rule's copies of the rules it
// refers to would be lowered again at each use.
inline Expr regular(Expr item, Expr as_written) {
    Expr e = regular(std::move(item));
    e.items.push_back(std::move(as_written));
    return e;
}

// Sorted, merged ranges; the complement over all code points when `negated`.
std::vector<CodeRange> normalize_ranges(std::vector<CodeRange> ranges, bool negated);

}  // namespace kite::grammar
