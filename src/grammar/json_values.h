// The pieces of JSON text that JSON Schema constraints are built from: generic values, string
// characters as compact JSON writes them, integer ranges, bounded numbers and string formats.
// Whitespace: none. Constrained output is compact JSON (json.dumps with separators (",", ":")),
// so a value has exactly one spelling per character, and a model cannot pad its output.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "grammar/expr.h"
#include "grammar/grammar.h"

namespace kite::grammar {

// Defines the generic rules in `b`: json_value, json_object, json_array, json_string,
// json_number, json_integer, json_char (one string character, escaped as compact JSON does).
void define_json_rules(GrammarBuilder& b);

// The characters of `e` (built from Class nodes, as regex_to_expr makes) as they appear inside
// a JSON string: quotes, backslashes and control characters escaped the way json.dumps does.
Expr json_encode_chars(const Expr& e);

// An integer in [lo, hi] (an absent bound is unbounded), as JSON writes it.
Expr integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi);

// A number without exponent in the range given by integer bounds lo >= 0 and hi, each
// inclusive or exclusive; throws GrammarError for a range it cannot express.
Expr number_range(int64_t lo, bool lo_exclusive, std::optional<int64_t> hi, bool hi_exclusive);

// The grammar of a string `format`, without the quotes; throws GrammarError for formats it
// does not know.
Expr string_format(const std::string& format);

// The JSON string literal of `text` (with quotes), as compact JSON writes it.
std::string json_quote(const std::string& text);

}  // namespace kite::grammar
