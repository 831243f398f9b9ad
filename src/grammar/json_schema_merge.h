// allOf and $ref with sibling keywords: both schemas apply, which JSON Schema Compiler turns
// into one schema with the keywords of both where that is exact (properties united, required
// united, bounds tightened, types intersected); anything else is a GrammarError.
#pragma once

#include <nlohmann/json.hpp>

namespace kite::grammar {

nlohmann::ordered_json merge_schemas(const nlohmann::ordered_json& a,
                                     const nlohmann::ordered_json& b);

}  // namespace kite::grammar
