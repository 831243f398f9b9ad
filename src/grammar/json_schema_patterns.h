// patternProperties, rewritten into what the object compiler enforces: declared properties,
// one schema for every other member, and optionally a language the other members' names
// must belong to. Exact where it can be, otherwise narrower (never accepting an object the
// schema rejects); a case it can do neither for is a GrammarError naming the keyword.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "grammar/expr.h"

namespace kite::grammar {

struct PatternRewrite {
    nlohmann::ordered_json schema;    // the object schema without patternProperties
    std::optional<Expr> extra_names;  // set: an undeclared name's JSON-escaped contents
};

PatternRewrite rewrite_pattern_properties(const nlohmann::ordered_json& s);

}  // namespace kite::grammar
