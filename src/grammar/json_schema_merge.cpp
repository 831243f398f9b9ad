#include "grammar/json_schema_merge.h"

#include <algorithm>

#include <fmt/format.h>

#include "grammar/grammar.h"

namespace kite::grammar {

namespace {

using json = nlohmann::ordered_json;

json as_type_list(const json& t) {
    return t.is_array() ? t : json::array({t});
}

bool type_admits(const json& list, const std::string& t) {
    for (const json& x : list)
        if (x == t || (t == "integer" && x == "number")) return true;
    return false;
}

json intersect_types(const json& a, const json& b) {
    json out = json::array();
    const json la = as_type_list(a), lb = as_type_list(b);
    for (const json& t : la)
        if (type_admits(lb, t.get<std::string>())) out.push_back(t);
    for (const json& t : lb)
        if (t == "integer" && type_admits(la, "integer") && !type_admits(out, "integer"))
            out.push_back(t);
    return out;
}

const char* const kLowerBounds[] = {"minimum", "minLength", "minItems", "minProperties",
                                    "exclusiveMinimum"};
const char* const kUpperBounds[] = {"maximum", "maxLength", "maxItems", "maxProperties",
                                    "exclusiveMaximum"};

// Keywords that assert something (or apply subschemas): any other key only annotates, and
// validators ignore it.
const char* const kKeywords[] = {"type",
                                 "enum",
                                 "const",
                                 "properties",
                                 "required",
                                 "additionalProperties",
                                 "patternProperties",
                                 "propertyNames",
                                 "minProperties",
                                 "maxProperties",
                                 "dependencies",
                                 "dependentRequired",
                                 "dependentSchemas",
                                 "unevaluatedProperties",
                                 "items",
                                 "prefixItems",
                                 "additionalItems",
                                 "contains",
                                 "minContains",
                                 "maxContains",
                                 "minItems",
                                 "maxItems",
                                 "uniqueItems",
                                 "unevaluatedItems",
                                 "minLength",
                                 "maxLength",
                                 "pattern",
                                 "format",
                                 "minimum",
                                 "maximum",
                                 "exclusiveMinimum",
                                 "exclusiveMaximum",
                                 "multipleOf",
                                 "not",
                                 "allOf",
                                 "anyOf",
                                 "oneOf",
                                 "if",
                                 "then",
                                 "else",
                                 "$ref",
                                 "$dynamicRef",
                                 "$recursiveRef"};

bool is_keyword(const std::string& key) {
    return std::find_if(std::begin(kKeywords), std::end(kKeywords),
                        [&](const char* k) { return key == k; }) != std::end(kKeywords);
}

bool in(const char* const (&list)[5], const std::string& key) {
    return std::find_if(std::begin(list), std::end(list),
                        [&](const char* k) { return key == k; }) != std::end(list);
}

}  // namespace

json merge_schemas(const json& a, const json& b) {
    if (a.is_boolean()) return a.get<bool>() ? b : a;
    if (b.is_boolean()) return b.get<bool>() ? a : b;
    // additionalProperties only sees its own schema's properties: merged with the other
    // side's properties it would change meaning.
    const auto limits = [](const json& s) {
        return s.contains("additionalProperties") && s["additionalProperties"] != true;
    };
    const auto names = [](const json& s) {
        return s.contains("properties") || s.contains("patternProperties");
    };
    if ((limits(a) && names(b)) || (limits(b) && names(a)))
        throw GrammarError("allOf: cannot merge 'additionalProperties' with other properties");
    json out = a;
    for (const auto& [key, value] : b.items()) {
        if (!out.contains(key) || out[key] == value) {
            out[key] = value;
        } else if (key == "type") {
            out[key] = intersect_types(out[key], value);
        } else if (key == "required") {
            for (const json& name : value)
                if (std::find(out[key].begin(), out[key].end(), name) == out[key].end())
                    out[key].push_back(name);
        } else if (key == "properties" && value.is_object() && out[key].is_object()) {
            // Only when neither side limits additional properties: otherwise each side's
            // additionalProperties would apply to the other's properties.
            if (a.contains("additionalProperties") || b.contains("additionalProperties"))
                throw GrammarError("allOf: cannot merge 'properties' with additionalProperties");
            for (const auto& [name, schema] : value.items())
                out[key][name] =
                    out[key].contains(name) ? merge_schemas(out[key][name], schema) : schema;
        } else if (in(kLowerBounds, key) && value.is_number() && out[key].is_number()) {
            out[key] = std::max(out[key].get<double>(), value.get<double>());
        } else if (in(kUpperBounds, key) && value.is_number() && out[key].is_number()) {
            out[key] = std::min(out[key].get<double>(), value.get<double>());
        } else if (!is_keyword(key)) {
            continue;  // an annotation: either side's will do
        } else {
            throw GrammarError(fmt::format("allOf: cannot merge '{}'", key));
        }
    }
    return out;
}

}  // namespace kite::grammar
