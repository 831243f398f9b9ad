#include "grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/utf8.h"
#include "grammar/json_schema_merge.h"
#include "grammar/json_values.h"
#include "grammar/regex.h"

namespace kite::grammar {

namespace {

using json = nlohmann::ordered_json;

// Assertions this compiler cannot enforce: a schema using one does not compile.
const char* const kUnsupported[] = {"if",
                                    "then",
                                    "else",
                                    "patternProperties",
                                    "propertyNames",
                                    "dependentRequired",
                                    "dependentSchemas",
                                    "dependencies",
                                    "unevaluatedProperties",
                                    "unevaluatedItems",
                                    "contains",
                                    "minContains",
                                    "maxContains",
                                    "$dynamicRef",
                                    "$recursiveRef",
                                    "multipleOf",
                                    "uniqueItems",
                                    "minProperties",
                                    "maxProperties"};

// Assertions other than type, which enum/const values would have to be checked against.
const char* const kAssertions[] = {
    "minLength",  "maxLength",   "pattern",          "format",
    "minimum",    "maximum",     "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "properties",  "required",         "additionalProperties",
    "items",      "prefixItems", "minItems",         "maxItems",
    "not"};

// Formats Python's format checker verifies; any other format name is an annotation only.
const char* const kCheckedFormats[] = {"email",
                                       "idn-email",
                                       "hostname",
                                       "idn-hostname",
                                       "ipv4",
                                       "ipv6",
                                       "iri",
                                       "iri-reference",
                                       "uri",
                                       "uri-reference",
                                       "uri-template",
                                       "date",
                                       "date-time",
                                       "time",
                                       "duration",
                                       "json-pointer",
                                       "relative-json-pointer",
                                       "regex",
                                       "uuid"};

const char* const kTypes[] = {"object", "array", "string", "number", "integer", "boolean", "null"};

// Keys that only annotate (or that the compiler reads elsewhere): they never constrain.
bool is_trivially_ok(const json& s, const char* key) {
    if (!s.contains(key)) return true;
    const json& v = s[key];
    const std::string k = key;
    if (k == "uniqueItems") return v == false || (s.contains("maxItems") && s["maxItems"] == 1);
    if (k == "multipleOf") return v == 1 || v == 1.0;
    if (k == "minProperties") return v.is_number() && v.get<double>() <= 0;
    if (k == "maxProperties")  // no additional properties, and too few declared to pass it
        return v.is_number() && s.contains("additionalProperties") &&
               s["additionalProperties"] == false &&
               s.value("properties", json::object()).size() <= v.get<double>();
    return false;
}

std::optional<int64_t> int_bound(const json& v, bool lower) {
    if (!v.is_number()) throw GrammarError("a numeric bound that is not a number");
    // Bounds beyond +-9e15 are pulled in to it: a narrower range, never a wider one.
    const double d = std::clamp(v.get<double>(), -9e15, 9e15);
    return static_cast<int64_t>(lower ? std::ceil(d) : std::floor(d));
}

class SchemaCompiler {
  public:
    explicit SchemaCompiler(const json& root) : root_(root) { define_json_rules(b_); }

    std::shared_ptr<const Grammar> compile(std::string_view before, std::string_view after) {
        b_.define("root",
                  seq({lit(std::string(before)), schema_expr(root_, 0), lit(std::string(after))}));
        return b_.build("root");
    }

  private:
    [[noreturn]] static void fail(const std::string& what) { throw GrammarError(what); }

    const json& resolve(const std::string& ref) const {
        if (ref.empty() || ref[0] != '#') fail(fmt::format("$ref '{}': only local refs", ref));
        try {
            return root_.at(json::json_pointer(ref.substr(1)));
        } catch (const json::exception&) {
            fail(fmt::format("$ref '{}' points nowhere", ref));
        }
    }

    // A $ref target is one rule, so recursive schemas give recursive grammars.
    Expr ref_expr(const std::string& ref, int depth) {
        auto it = ref_rules_.find(ref);
        if (it != ref_rules_.end()) return grammar::ref(it->second);
        const std::string name = fmt::format("ref{}", ref_rules_.size());
        ref_rules_[ref] = name;
        b_.define(name, schema_expr(resolve(ref), depth + 1));
        return grammar::ref(name);
    }

    Expr schema_expr(const json& s, int depth) {
        if (depth > 200) fail("the schema nests too deeply");
        // $ref beside other keywords, allOf and anyOf siblings copy subschemas inline, which
        // can multiply at every level: bound the work, not only the depth.
        if (++subschemas_ > kMaxSubschemas)
            fail(
                fmt::format("the schema expands to over {} subschemas ($ref with siblings, "
                            "allOf, anyOf): too large to compile",
                            kMaxSubschemas));
        if (s.is_boolean()) return s.get<bool>() ? grammar::ref("json_value") : alt({});
        if (!s.is_object()) fail("a schema must be an object or a boolean");
        if (s.contains("$ref")) return with_ref(s, depth);
        if (s.contains("allOf")) return all_of(s, depth);
        if (s.contains("anyOf")) return any_of(s, "anyOf", depth);
        if (s.contains("oneOf")) return one_of(s, depth);
        if (s.contains("not") &&
            (s["not"] == true || (s["not"].is_object() && only_annotations(s["not"]))))
            return alt({});  // not {} matches nothing
        for (const char* key : kUnsupported)
            if (!is_trivially_ok(s, key)) fail(fmt::format("unsupported keyword '{}'", key));
        if (s.contains("enum") || s.contains("const")) return enum_expr(s);
        return typed(s, depth);
    }

    static json without(json s, const char* key) {
        s.erase(key);
        return s;
    }

    static bool only_annotations(const json& s) {
        for (const auto& [key, v] : s.items())
            if (key != "title" && key != "description" && key != "default" && key != "examples" &&
                key != "$comment" && key != "$schema" && key != "$id" && key != "$defs" &&
                key != "definitions")
                return false;
        return true;
    }

    Expr with_ref(const json& s, int depth) {
        const json rest = without(s, "$ref");
        if (!s["$ref"].is_string()) fail("'$ref' must be a string");
        if (only_annotations(rest)) return ref_expr(s["$ref"], depth);
        return schema_expr(merge_schemas(resolve(s["$ref"]), rest), depth + 1);
    }

    Expr all_of(const json& s, int depth) {
        if (!s["allOf"].is_array()) fail("'allOf' must be an array");
        json merged = without(s, "allOf");
        for (const json& part : s["allOf"]) {
            json p = part;
            for (int hops = 0; p.is_object() && p.contains("$ref"); ++hops) {
                if (hops > 16) fail("allOf: $ref chain too long");
                const json target = resolve(p["$ref"]);
                p = merge_schemas(target, without(p, "$ref"));
            }
            merged = merge_schemas(merged, p);
        }
        return schema_expr(merged, depth + 1);
    }

    // The siblings of anyOf apply to every branch.
    std::vector<json> branches(const json& s, const char* key) {
        if (!s[key].is_array() || s[key].empty())
            fail(fmt::format("'{}' must be a non-empty array", key));
        const json rest = without(s, key);
        std::vector<json> out;
        for (const json& branch : s[key])
            out.push_back(only_annotations(rest) ? branch : merge_schemas(rest, branch));
        return out;
    }

    Expr any_of(const json& s, const char* key, int depth) {
        std::vector<Expr> parts;
        for (const json& branch : branches(s, key)) parts.push_back(schema_expr(branch, depth + 1));
        return alt(std::move(parts));
    }

    // The JSON types a branch may produce, when it says (else all).
    std::set<std::string> types_of(const json& s) const {
        const json* t = &s;
        json resolved;
        if (s.is_object() && s.contains("$ref") && s["$ref"].is_string()) {
            resolved = resolve(s["$ref"]);
            t = &resolved;
        }
        std::set<std::string> out;
        if (t->is_object() && t->contains("type")) {
            for (const json& x :
                 ((*t)["type"].is_array() ? (*t)["type"] : json::array({(*t)["type"]})))
                if (x.is_string()) out.insert(x == "integer" ? "number" : x.get<std::string>());
            return out;
        }
        if (t->is_object() && t->contains("const")) {
            out.insert(type_name((*t)["const"]));
            return out;
        }
        return {"object", "array", "string", "number", "boolean", "null"};
    }

    static std::string type_name(const json& v) {
        if (v.is_object()) return "object";
        if (v.is_array()) return "array";
        if (v.is_string()) return "string";
        if (v.is_number()) return "number";
        if (v.is_boolean()) return "boolean";
        return "null";
    }

    // oneOf accepts an instance matching exactly one branch; taken as anyOf only when no
    // instance can match two branches, which is known here when their types are disjoint.
    Expr one_of(const json& s, int depth) {
        const std::vector<json> parts = branches(s, "oneOf");
        for (size_t i = 0; i < parts.size(); ++i)
            for (size_t j = i + 1; j < parts.size(); ++j)
                if (!disjoint(parts[i], parts[j]))
                    fail("unsupported keyword 'oneOf' (branches overlap)");
        return any_of(s, "oneOf", depth);
    }

    const json& deref(const json& s) const {
        if (s.is_object() && s.contains("$ref") && s["$ref"].is_string()) return resolve(s["$ref"]);
        return s;
    }

    // The values a property may take when its schema lists them (enum or const), else null.
    json listed_values(const json& s) const {
        const json& p = deref(s);
        if (!p.is_object()) return nullptr;
        if (p.contains("const")) return json::array({p["const"]});
        if (p.contains("enum") && p["enum"].is_array()) return p["enum"];
        return nullptr;
    }

    // No instance matches both: their types differ, or both are objects requiring a property
    // whose listed values differ (a discriminator).
    bool disjoint(const json& a, const json& b) const {
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
            const json va =
                listed_values(x.value("properties", json::object()).value(n, json(true)));
            const json vb =
                listed_values(y.value("properties", json::object()).value(n, json(true)));
            if (va.is_null() || vb.is_null()) continue;
            bool overlap = false;
            for (const json& v : va)
                overlap = overlap || std::find(vb.begin(), vb.end(), v) != vb.end();
            if (!overlap) return true;
        }
        return false;
    }

    // Which of the JSON types the schema allows (integer only when number is not).
    // multipleOf 1 keeps only integers; `not` with only a type removes that type.
    std::vector<std::string> allowed_types(const json& s) {
        const json list =
            !s.contains("type")
                ? json::array({"object", "array", "string", "number", "boolean", "null"})
            : s["type"].is_array() ? s["type"]
                                   : json::array({s["type"]});
        std::vector<std::string> out;
        for (const json& t : list) {
            if (!t.is_string() ||
                std::find(std::begin(kTypes), std::end(kTypes), t) == std::end(kTypes))
                fail(fmt::format("bad type {}", t.dump()));
            out.push_back(t);
        }
        const auto has = [&](const char* t) {
            return std::find(out.begin(), out.end(), t) != out.end();
        };
        if (has("number")) std::erase(out, std::string("integer"));
        if (s.contains("multipleOf") && has("number")) {
            std::erase(out, std::string("number"));
            out.push_back("integer");
        }
        for (const std::string& t : excluded_types(s)) {
            if (t == "integer" && has("number"))
                fail("unsupported keyword 'not' (number but not integer)");
            std::erase(out, t);
            if (t == "number") std::erase(out, std::string("integer"));
        }
        return out;
    }

    std::vector<std::string> excluded_types(const json& s) {
        if (!s.contains("not")) return {};
        const json& n = s["not"];
        if (!n.is_object() || !n.contains("type") || n.size() != 1)
            fail("unsupported keyword 'not'");
        std::vector<std::string> out;
        for (const json& t : (n["type"].is_array() ? n["type"] : json::array({n["type"]})))
            if (t.is_string()) out.push_back(t);
        return out;
    }

    bool value_has_type(const json& v, const std::vector<std::string>& types) const {
        for (const std::string& t : types) {
            if (t == "integer" && v.is_number_integer()) return true;
            if (t == "integer" && v.is_number_float() &&
                v.get<double>() == std::floor(v.get<double>()))
                return true;
            if (t != "integer" && type_name(v) == t) return true;
        }
        return false;
    }

    Expr enum_expr(const json& s) {
        if (s.contains("enum") && !s["enum"].is_array()) fail("'enum' must be an array");
        // Both: the const, if the enum lists it.
        json values = s.contains("enum") ? s["enum"] : json::array({s["const"]});
        if (s.contains("const") && s.contains("enum"))
            values = std::find(values.begin(), values.end(), s["const"]) != values.end()
                         ? json::array({s["const"]})
                         : json::array();
        for (const char* key : kAssertions)
            if (s.contains(key))
                fail(fmt::format("unsupported keyword '{}' beside enum/const", key));
        const std::vector<std::string> types = allowed_types(s);
        std::vector<Expr> parts;
        for (const json& v : values)
            if (value_has_type(v, types)) parts.push_back(lit(v.dump()));
        return alt(std::move(parts));
    }

    Expr typed(const json& s, int depth) {
        std::vector<Expr> parts;
        for (const std::string& t : allowed_types(s)) parts.push_back(type_expr(s, t, depth));
        return alt(std::move(parts));
    }

    Expr type_expr(const json& s, const std::string& t, int depth) {
        if (t == "object") return object_expr(s, depth);
        if (t == "array") return array_expr(s, depth);
        if (t == "string") return string_expr(s);
        if (t == "number") return number_expr(s, false);
        if (t == "integer") return number_expr(s, true);
        if (t == "boolean") return alt({lit("true"), lit("false")});
        return lit("null");
    }

    Expr string_expr(const json& s) {
        const bool has_len = s.contains("minLength") || s.contains("maxLength");
        std::optional<Expr> content;
        if (s.contains("pattern")) {
            if (!s["pattern"].is_string()) fail("'pattern' must be a string");
            content = json_encode_chars(
                regex_to_expr(s["pattern"].get<std::string>(), RegexMatch::Search));
        }
        if (s.contains("format") && s["format"].is_string()) {
            const std::string f = s["format"];
            if (std::find(std::begin(kCheckedFormats), std::end(kCheckedFormats), f) !=
                std::end(kCheckedFormats)) {
                if (content) fail("unsupported keyword 'format' beside 'pattern'");
                content = string_format(f);
            }
        }
        if (content && has_len)
            fail("unsupported keyword 'minLength'/'maxLength' beside pattern or format");
        if (content) return seq({lit("\""), *content, lit("\"")});
        uint32_t lo = 0, hi = kUnbounded;
        if (s.contains("minLength"))
            lo = static_cast<uint32_t>(std::max<int64_t>(0, *int_bound(s["minLength"], true)));
        if (s.contains("maxLength")) {
            const auto b = int_bound(s["maxLength"], false);
            if (b && *b < 0) return alt({});
            if (b) hi = static_cast<uint32_t>(std::min<int64_t>(*b, 1'000'000));
        }
        if (hi != kUnbounded && lo > hi) return alt({});
        return seq({lit("\""), repeat(grammar::ref("json_char"), lo, hi), lit("\"")});
    }

    struct Bound {
        std::optional<double> value;
        bool exclusive = false;
    };

    // minimum/exclusiveMinimum (a number, or draft 4's boolean beside minimum), tightest wins.
    static Bound bound(const json& s, const char* plain, const char* exclusive, bool lower) {
        Bound b;
        if (s.contains(plain) && s[plain].is_number()) b.value = s[plain].get<double>();
        if (s.contains(exclusive)) {
            const json& e = s[exclusive];
            if (e.is_boolean()) {
                b.exclusive = e.get<bool>() && b.value;
            } else if (e.is_number()) {
                const double v = e.get<double>();
                if (!b.value || (lower ? v >= *b.value : v <= *b.value)) {
                    b.value = v;
                    b.exclusive = true;
                }
            }
        }
        return b;
    }

    Expr number_expr(const json& s, bool integer) {
        const Bound lo = bound(s, "minimum", "exclusiveMinimum", true);
        const Bound hi = bound(s, "maximum", "exclusiveMaximum", false);
        if (integer) {
            std::optional<int64_t> a, z;
            if (lo.value) {
                a = int_bound(*lo.value, true);
                if (a && lo.exclusive && double(*a) == *lo.value) ++*a;
                if (!a && *lo.value > 0) return alt({});
            }
            if (hi.value) {
                z = int_bound(*hi.value, false);
                if (z && hi.exclusive && double(*z) == *hi.value) --*z;
                if (!z && *hi.value < 0) return alt({});
            }
            if (!lo.value && !hi.value) return grammar::ref("json_integer");
            return integer_range(a, z);
        }
        if (!lo.value && !hi.value) return grammar::ref("json_number");
        const auto whole = [](std::optional<double> v) {
            return v && *v == std::floor(*v) && std::fabs(*v) < 9e15;
        };
        if (!whole(lo.value) || *lo.value < 0 || (hi.value && !whole(hi.value)))
            fail(
                "unsupported keyword 'minimum'/'maximum' (number bounds other than whole, "
                "non-negative)");
        std::optional<int64_t> z;
        if (hi.value) z = static_cast<int64_t>(*hi.value);
        return number_range(static_cast<int64_t>(*lo.value), lo.exclusive, z, hi.exclusive);
    }

    Expr object_expr(const json& s, int depth);
    Expr array_expr(const json& s, int depth);

    const json& root_;
    GrammarBuilder b_;
    std::map<std::string, std::string> ref_rules_;
    int object_count_ = 0;
    static constexpr size_t kMaxSubschemas = 20'000;
    size_t subschemas_ = 0;
};

}  // namespace

namespace {

// Names as trees of code points, for "a key that is none of these".
struct NameTrie {
    bool terminal = false;
    std::map<uint32_t, NameTrie> children;
};

void insert_name(NameTrie& trie, const std::string& name) {
    NameTrie* node = &trie;
    std::string_view rest = name;
    while (!rest.empty()) {
        const Utf8Sequence s = next_utf8_sequence(rest);
        if (s.status != Utf8Status::Complete) throw GrammarError("a property name is not UTF-8");
        node = &node->children[decode_utf8(rest.substr(0, s.length))];
        rest.remove_prefix(s.length);
    }
    node->terminal = true;
}

// The string contents (JSON-escaped) that spell none of the names below `node`.
Expr none_of(const NameTrie& node) {
    std::vector<Expr> parts;
    if (!node.terminal) parts.push_back(empty());
    std::vector<CodeRange> taken;
    for (const auto& [cp, child] : node.children) {
        taken.push_back({cp, cp});
        parts.push_back(seq({json_encode_chars(char_class({{cp, cp}})), none_of(child)}));
    }
    parts.push_back(seq({json_encode_chars(char_class(taken, true)), star(ref("json_char"))}));
    return alt(std::move(parts));
}

}  // namespace

Expr SchemaCompiler::object_expr(const json& s, int depth) {
    const json props = s.value("properties", json::object());
    if (!props.is_object()) fail("'properties' must be an object");
    std::set<std::string> required;
    if (s.contains("required")) {
        if (!s["required"].is_array()) fail("'required' must be an array");
        for (const json& r : s["required"]) {
            if (!r.is_string()) fail("'required' must list strings");
            required.insert(r.get<std::string>());
        }
    }
    const json additional = s.value("additionalProperties", json(true));
    struct Member {
        std::string name;
        Expr value;
        bool required;
    };
    std::vector<Member> members;
    NameTrie names;
    for (const auto& [name, schema] : props.items()) {
        members.push_back({name, schema_expr(schema, depth + 1), required.count(name) > 0});
        insert_name(names, name);
    }
    for (const std::string& name : required) {
        if (props.contains(name)) continue;
        members.push_back({name, schema_expr(additional, depth + 1), true});
        insert_name(names, name);
    }
    const int id = object_count_++;
    const auto rule = [&](size_t i, bool comma) {
        return fmt::format("obj{}_{}_{}", id, i, comma);
    };
    // The additional members after the declared ones.
    const bool open = additional != false;
    if (open) {
        const Expr member =
            seq({lit("\""), none_of(names), lit("\":"), schema_expr(additional, depth + 1)});
        b_.define(fmt::format("obj{}_extra", id), member);
    }
    const Expr extra = ref(fmt::format("obj{}_extra", id));
    for (bool comma : {false, true}) {
        const Expr sep = comma ? lit(",") : empty();
        Expr tail = open ? opt(seq({sep, extra, star(seq({lit(","), extra}))})) : empty();
        b_.define(rule(members.size(), comma), std::move(tail));
    }
    for (size_t i = members.size(); i-- > 0;) {
        for (bool comma : {false, true}) {
            const Member& m = members[i];
            std::vector<Expr> parts;
            parts.push_back(seq({comma ? lit(",") : empty(), lit(json_quote(m.name) + ":"), m.value,
                                 ref(rule(i + 1, true))}));
            if (!m.required) parts.push_back(ref(rule(i + 1, comma)));
            b_.define(rule(i, comma), alt(std::move(parts)));
        }
    }
    return seq({lit("{"), ref(rule(0, false)), lit("}")});
}

Expr SchemaCompiler::array_expr(const json& s, int depth) {
    std::vector<Expr> prefix;
    json items = s.value("items", json(true));
    if (s.contains("prefixItems")) {
        if (!s["prefixItems"].is_array()) fail("'prefixItems' must be an array");
        for (const json& p : s["prefixItems"]) prefix.push_back(schema_expr(p, depth + 1));
    } else if (items.is_array()) {  // draft 4-2019: items as a tuple, then additionalItems
        for (const json& p : items) prefix.push_back(schema_expr(p, depth + 1));
        items = s.value("additionalItems", json(true));
    }
    uint32_t lo = 0, hi = kUnbounded;
    if (s.contains("minItems"))
        lo = static_cast<uint32_t>(std::clamp<int64_t>(*int_bound(s["minItems"], true), 0, 100000));
    if (s.contains("maxItems")) {
        const auto b = int_bound(s["maxItems"], false);
        if (b && *b < 0) return alt({});
        if (b) hi = static_cast<uint32_t>(std::min<int64_t>(*b, 100000));
    }
    if (hi != kUnbounded && lo > hi) return alt({});
    const Expr item = schema_expr(items, depth + 1);
    // Elements from index i on, i elements written so far.
    std::function<Expr(uint32_t)> from = [&](uint32_t i) -> Expr {
        const Expr sep = i > 0 ? lit(",") : empty();
        if (i < prefix.size()) {
            if (hi != kUnbounded && i >= hi) return empty();
            Expr next = seq({sep, prefix[i], from(i + 1)});
            if (i < lo) return next;
            return alt({empty(), std::move(next)});
        }
        const uint32_t need = lo > i ? lo - i : 0;
        const uint32_t room = hi == kUnbounded ? kUnbounded : hi - i;
        if (room == 0) return empty();
        if (i == 0) {
            const uint32_t more_lo = need > 0 ? need - 1 : 0;
            const uint32_t more_hi = room == kUnbounded ? kUnbounded : room - 1;
            Expr list = seq({item, repeat(seq({lit(","), item}), more_lo, more_hi)});
            return need > 0 ? list : opt(std::move(list));
        }
        return repeat(seq({lit(","), item}), need, room);
    };
    return seq({lit("["), from(0), lit("]")});
}

std::shared_ptr<const Grammar> compile_json_schema(const json& schema, std::string_view before,
                                                   std::string_view after) {
    return SchemaCompiler(schema).compile(before, after);
}

std::shared_ptr<const Grammar> json_object_grammar() {
    GrammarBuilder b;
    define_json_rules(b);
    return b.build("json_object");
}

}  // namespace kite::grammar
