#include "grammar/json_schema_patterns.h"

#include <memory>
#include <string>

#include <fmt/format.h>

#include "grammar/grammar.h"
#include "grammar/json_schema_merge.h"
#include "grammar/json_values.h"
#include "grammar/matcher.h"
#include "grammar/regex.h"

namespace kite::grammar {

namespace {

using json = nlohmann::ordered_json;

[[noreturn]] void refuse(const std::string& why) {
    throw GrammarError(fmt::format("unsupported keyword 'patternProperties' ({})", why));
}

// Patterns every name matches: re.search finds an empty match at the start or the end.
bool matches_every_name(const std::string& p) {
    return p.empty() || p == ".*" || p == "^.*" || p == ".*$";
}

bool trivially_true(const json& s) {
    return s == true || (s.is_object() && s.empty());
}

// Whether `name` matches `pattern` as re.search does; decided only for names of printable
// ASCII, which the regex grammar reads exactly as Python does (\d, \w, \s and . differ from
// it only beyond ASCII); nullopt for other names.
std::optional<bool> name_matches(const std::string& name, const std::string& pattern) {
    for (const char c : name)
        if (c < 0x20 || c > 0x7E) return std::nullopt;
    GrammarBuilder b;
    b.define("root", regex_to_expr(pattern, RegexMatch::Search));
    Matcher m(b.build("root"));
    return m.advance(name) && m.can_stop();
}

json merged(const json& a, const json& b) {
    try {
        return merge_schemas(a, b);
    } catch (const GrammarError& e) {
        refuse(e.what());
    }
}

// additionalProperties false and no pattern matching every name: an undeclared name must
// match a pattern, and all patterns must then ask the same of its value.
PatternRewrite names_from_patterns(const json& s, const json& patterns) {
    PatternRewrite out{s, std::nullopt};
    const json& value = patterns.begin().value();
    std::vector<Expr> names;
    for (const auto& [p, v] : patterns.items()) {
        if (v != value) refuse("patterns with different schemas beside additionalProperties false");
        names.push_back(regular(json_encode_chars(regex_to_expr(p, RegexMatch::Search))));
    }
    // A declared name the patterns also spell would be accepted with the pattern's schema
    // alone: only declared names without a schema of their own may match.
    json props = s.value("properties", json::object());
    for (const json& r : s.value("required", json::array()))
        if (r.is_string() && !props.contains(r.get<std::string>()))
            props[r.get<std::string>()] = true;
    for (auto& [name, schema] : props.items()) {
        bool any = false;
        for (const auto& [p, v] : patterns.items()) {
            const std::optional<bool> m = name_matches(name, p);
            if (!m) refuse(fmt::format("property name '{}' beside patterns", name));
            any = any || *m;
        }
        if (any && !trivially_true(schema))
            refuse(fmt::format("property '{}' also matches a pattern", name));
        if (any)
            schema = value;
        else if (!s.value("properties", json::object()).contains(name))
            schema = false;
    }
    if (!props.empty()) out.schema["properties"] = props;
    out.schema["additionalProperties"] = value;
    out.extra_names = alt(std::move(names));
    return out;
}

}  // namespace

PatternRewrite rewrite_pattern_properties(const json& s) {
    PatternRewrite out{s, std::nullopt};
    if (!s.contains("patternProperties")) return out;
    const json& patterns = s["patternProperties"];
    if (!patterns.is_object()) refuse("it must be an object");
    out.schema.erase("patternProperties");
    if (patterns.empty()) return out;
    const json additional = s.value("additionalProperties", json(true));
    bool every_name = false;
    for (const auto& [p, v] : patterns.items()) every_name = every_name || matches_every_name(p);
    if (additional == false && !every_name) return names_from_patterns(out.schema, patterns);
    // Every undeclared name takes the schemas of all patterns and, unless a pattern matches
    // every name, additionalProperties': for a name matching only some of them this is
    // narrower than the schema, never wider.
    json extra = every_name ? json(true) : additional;
    for (const auto& [p, v] : patterns.items()) extra = merged(extra, v);
    out.schema["additionalProperties"] = extra;
    if (!s.contains("properties")) return out;
    json props = s["properties"];
    if (!props.is_object()) return out;
    for (auto& [name, schema] : props.items())
        for (const auto& [p, v] : patterns.items())
            if (!trivially_true(v) && name_matches(name, p) != false) schema = merged(schema, v);
    out.schema["properties"] = props;
    return out;
}

}  // namespace kite::grammar
