// What the JSON Schema tests ask of a compiled schema: does it accept an instance (every byte
// allowed and the end reachable), and which compile error does it give.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace kite::grammar {

inline bool accepts(const char* schema, const char* instance) {
    Matcher m(compile_json_schema(nlohmann::ordered_json::parse(schema)));
    return m.advance(instance) && m.can_stop();
}

// The compile error's message; empty when the schema compiles.
inline std::string compile_error(const char* schema) {
    try {
        compile_json_schema(nlohmann::ordered_json::parse(schema));
    } catch (const GrammarError& e) {
        return e.what();
    }
    return "";
}

}  // namespace kite::grammar
