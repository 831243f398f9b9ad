#include "grammar/json_schema_oneof.h"

#include <algorithm>
#include <vector>

namespace kite::grammar {

using json = nlohmann::ordered_json;

std::set<std::string> BranchOverlap::types_of(const json& s) const {
    const json* t = &s;
    json resolved;
    if (s.is_object() && s.contains("$ref") && s["$ref"].is_string()) {
        resolved = resolve_(s["$ref"]);
        t = &resolved;
    }
    std::set<std::string> out;
    if (t->is_object() && t->contains("type")) {
        for (const json& x : ((*t)["type"].is_array() ? (*t)["type"] : json::array({(*t)["type"]})))
            if (x.is_string()) out.insert(x == "integer" ? "number" : x.get<std::string>());
        return out;
    }
    if (t->is_object() && t->contains("const")) {
        out.insert(json_type_name((*t)["const"]));
        return out;
    }
    return {"object", "array", "string", "number", "boolean", "null"};
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
    std::set<std::string> shared;
    for (const std::string& t : types_of(a))
        if (types_of(b).count(t)) shared.insert(t);
    if (shared != std::set<std::string>{"object"}) return std::nullopt;
    const json& x = deref(a);
    const json& y = deref(b);
    if (!x.is_object() || !y.is_object()) return std::nullopt;
    const json rx = x.value("required", json::array()), ry = y.value("required", json::array());
    std::vector<std::string> only_b;
    for (const json& n : ry)
        if (n.is_string() && std::find(rx.begin(), rx.end(), n) == rx.end()) {
            if (forbids(x, n)) return "";
            only_b.push_back(n);
        }
    if (only_b.size() != 1) return std::nullopt;
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
