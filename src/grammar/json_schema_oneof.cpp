#include "grammar/json_schema_oneof.h"

#include <algorithm>
#include <vector>

namespace kite::grammar {

using json = nlohmann::ordered_json;

namespace {

using Types = std::set<std::string>;
const Types kAllTypes = {"object", "array", "string", "number", "boolean", "null"};

Types intersect(const Types& a, const Types& b) {
    Types out;
    for (const std::string& t : a)
        if (b.count(t)) out.insert(t);
    return out;
}

// The types of the listed values of `key` (type names, or values for enum/const).
Types listed_types(const json& list, bool values) {
    Types out;
    for (const json& x : list) {
        if (values)
            out.insert(json_type_name(x));
        else if (x.is_string())
            out.insert(x == "integer" ? "number" : x.get<std::string>());
    }
    return out;
}

}  // namespace

// Each keyword that limits the types narrows the set; what is left holds every type an
// instance may have (maybe more).
std::set<std::string> BranchOverlap::types_of(const json& s, int depth) const {
    if (s == false) return {};
    if (!s.is_object() || depth > 8) return kAllTypes;
    Types out = kAllTypes;
    if (s.contains("$ref") && s["$ref"].is_string())
        out = intersect(out, types_of(resolve_(s["$ref"]), depth + 1));
    if (s.contains("type"))
        out = intersect(
            out, listed_types(s["type"].is_array() ? s["type"] : json::array({s["type"]}), false));
    if (s.contains("const")) out = intersect(out, {json_type_name(s["const"])});
    if (s.contains("enum") && s["enum"].is_array())
        out = intersect(out, listed_types(s["enum"], true));
    if (s.contains("allOf") && s["allOf"].is_array())
        for (const json& part : s["allOf"]) out = intersect(out, types_of(part, depth + 1));
    for (const char* key : {"anyOf", "oneOf"}) {
        if (!s.contains(key) || !s[key].is_array()) continue;
        Types any;
        for (const json& part : s[key]) any.merge(types_of(part, depth + 1));
        out = intersect(out, any);
    }
    return out;
}

std::string json_type_name(const json& v) {
    if (v.is_object()) return "object";
    if (v.is_array()) return "array";
    if (v.is_string()) return "string";
    if (v.is_number()) return "number";
    if (v.is_boolean()) return "boolean";
    return "null";
}

std::optional<std::string> BranchOverlap::told_apart_by(const json& a, const json& b) const {
    if (intersect(types_of(a), types_of(b)) != Types{"object"}) return std::nullopt;
    const json& x = deref(a);
    const json& y = deref(b);
    if (!x.is_object() || !y.is_object()) return std::nullopt;
    const json rx = x.value("required", json::array()), ry = y.value("required", json::array());
    // A property one requires and the other forbids: already apart.
    for (const json& n : rx)
        if (n.is_string() && forbids(y, n)) return "";
    std::vector<std::string> only_b;
    for (const json& n : ry)
        if (n.is_string() && std::find(rx.begin(), rx.end(), n) == rx.end()) {
            if (forbids(x, n)) return "";
            only_b.push_back(n);
        }
    if (only_b.empty()) return std::nullopt;
    // With several, forbidding one is narrower than the schema (an object of `a` with that
    // property but without another of them is refused): one `a` does not declare, if any.
    const json props = x.value("properties", json::object());
    for (const std::string& n : only_b)
        if (!props.contains(n)) return n;
    return only_b[0];
}

bool BranchOverlap::forbids(const json& s, const std::string& name) {
    const json props = s.value("properties", json::object());
    if (props.contains(name)) return props[name] == false;
    return s.value("additionalProperties", json(true)) == false && !s.contains("patternProperties");
}

const json& BranchOverlap::deref(const json& s) const {
    if (s.is_object() && s.contains("$ref") && s["$ref"].is_string()) return resolve_(s["$ref"]);
    return s;
}

json BranchOverlap::listed_values(const json& s) const {
    const json& p = deref(s);
    if (!p.is_object()) return nullptr;
    if (p.contains("const")) return json::array({p["const"]});
    if (p.contains("enum") && p["enum"].is_array()) return p["enum"];
    return nullptr;
}

bool BranchOverlap::disjoint(const json& a, const json& b) const {
    const json la = listed_values(a), lb = listed_values(b);
    if (la.is_array() && lb.is_array() && std::none_of(la.begin(), la.end(), [&](const json& v) {
            return std::find(lb.begin(), lb.end(), v) != lb.end();
        }))
        return true;
    const std::set<std::string> ta = types_of(a), tb = types_of(b);
    bool shared = false;
    for (const std::string& t : ta) shared = shared || tb.count(t);
    if (!shared) return true;
    if (ta != std::set<std::string>{"object"} || tb != ta) return false;
    const json& x = deref(a);
    const json& y = deref(b);
    if (!x.contains("required") || !y.contains("required")) return false;
    for (const json& name : x["required"]) {
        if (!name.is_string() ||
            std::find(y["required"].begin(), y["required"].end(), name) == y["required"].end())
            continue;
        const std::string n = name;
        const json va = listed_values(x.value("properties", json::object()).value(n, json(true)));
        const json vb = listed_values(y.value("properties", json::object()).value(n, json(true)));
        if (va.is_null() || vb.is_null()) continue;
        bool overlap = false;
        for (const json& v : va)
            overlap = overlap || std::find(vb.begin(), vb.end(), v) != vb.end();
        if (!overlap) return true;
    }
    return false;
}

}  // namespace kite::grammar
