// JSON Schema (the draft 2020-12 keywords real schemas use, and the draft 4-7 spellings of
// them) compiled to a grammar of the compact JSON texts the schema accepts. The promise is
// one-sided: the grammar never accepts an instance the schema rejects. A keyword that cannot
// be enforced exactly makes compilation fail with a GrammarError naming it; where an exact
// grammar would be too large, a narrower one is used (objects with over 6 declared properties
// list them in the schema's order, numbers under bounds are written without exponent).
#pragma once

#include <memory>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "grammar/grammar.h"

namespace kite::grammar {

// Properties keep the schema's order (where order matters), hence ordered_json. `before` and
// `after` are literal text around the JSON (a tool call's tags).
std::shared_ptr<const Grammar> compile_json_schema(const nlohmann::ordered_json& schema,
                                                   std::string_view before = {},
                                                   std::string_view after = {});

// Any JSON object (JSON mode).
std::shared_ptr<const Grammar> json_object_grammar();

}  // namespace kite::grammar
