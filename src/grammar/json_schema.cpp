#include "grammar/json_schema.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/utf8.h"
#include "grammar/expr_length.h"
#include "grammar/json_schema_merge.h"
#include "grammar/json_schema_oneof.h"
#include "grammar/json_schema_patterns.h"
#include "grammar/json_values.h"
#include "grammar/regex.h"

namespace kite::grammar {

namespace {

using json = nlohmann::ordered_json;

// Assertions this compiler cannot enforce: a schema using one does not compile.
const char* const kUnsupported[] = {"if",
                                    "then",
                                    "else",
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
                                    "uniqueItems"};

// Assertions other than type, which enum/const values would have to be checked against.
const char* const kAssertions[] = {
    "minLength",  "maxLength",         "pattern",          "format",
    "minimum",    "maximum",           "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "properties",        "required",         "additionalProperties",
    "items",      "prefixItems",       "minItems",         "maxItems",
    "not",        "patternProperties", "minProperties",    "maxProperties"};

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
    explicit SchemaCompiler(const json& root)
        : root_(root),
          overlap_([this](const std::string& ref) -> const json& { return resolve(ref); }) {
        define_json_rules(b_);
    }

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

    // oneOf accepts an instance matching exactly one branch: taken as anyOf when no instance
    // can match two branches. Objects of two branches that both may match are told apart by
    // a property only one requires: the other branch is compiled without it (exact when it
    // is the only such property, narrower otherwise).
    Expr one_of(const json& s, int depth) {
        const std::vector<json> parts = branches(s, "oneOf");
        std::vector<json> narrowed = parts;
        for (size_t i = 0; i < parts.size(); ++i)
            for (size_t j = 0; j < parts.size(); ++j) {
                if (i == j || overlap_.disjoint(parts[i], parts[j])) continue;
                const std::optional<std::string> name = overlap_.told_apart_by(parts[i], parts[j]);
                if (!name) fail("unsupported keyword 'oneOf' (branches overlap)");
                if (!name->empty()) narrowed[i] = without_property(narrowed[i], *name);
            }
        std::vector<Expr> alternatives;
        for (const json& branch : narrowed) alternatives.push_back(schema_expr(branch, depth + 1));
        return alt(std::move(alternatives));
    }

    json without_property(json s, const std::string& name) const {
        if (s.contains("$ref") && s["$ref"].is_string())
            s = merge_schemas(resolve(s["$ref"]), without(s, "$ref"));
        s["properties"][name] = false;
        return s;
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
            if (t != "integer" && json_type_name(v) == t) return true;
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
        uint32_t lo = 0, hi = kUnbounded;
        if (s.contains("minLength"))
            lo = static_cast<uint32_t>(std::max<int64_t>(0, *int_bound(s["minLength"], true)));
        if (s.contains("maxLength")) {
            const auto b = int_bound(s["maxLength"], false);
            if (b && *b < 0) return alt({});
            if (b) hi = static_cast<uint32_t>(std::min<int64_t>(*b, 1'000'000));
        }
        if (hi != kUnbounded && lo > hi) return alt({});
        const bool has_len = lo > 0 || hi != kUnbounded;
        std::optional<Expr> content;
        if (s.contains("pattern")) {
            if (!s["pattern"].is_string()) fail("'pattern' must be a string");
            Expr chars = regex_to_expr(s["pattern"].get<std::string>(), RegexMatch::Search);
            // Lengths cut the pattern's strings where one part of it varies in length.
            if (has_len) {
                std::optional<Expr> cut = restrict_length(chars, lo, hi);
                if (!cut) fail("unsupported keyword 'minLength'/'maxLength' beside this pattern");
                chars = std::move(*cut);
            }
            content = regular(json_encode_chars(chars));
        }
        if (s.contains("format") && s["format"].is_string()) {
            const std::string f = s["format"];
            if (std::find(std::begin(kCheckedFormats), std::end(kCheckedFormats), f) !=
                std::end(kCheckedFormats)) {
                if (content) fail("unsupported keyword 'format' beside 'pattern'");
                if (has_len) fail("unsupported keyword 'minLength'/'maxLength' beside format");
                content = string_format(f);
            }
        }
        if (content) return seq({lit("\""), *content, lit("\"")});
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
        if ((lo.value && !whole(lo.value)) || (hi.value && !whole(hi.value)))
            fail("unsupported keyword 'minimum'/'maximum' (number bounds that are not whole)");
        return signed_number_range(lo, hi);
    }

    // Whole bounds: the non-negative numbers in range, and the negative ones as "-" and
    // their magnitudes, which start above zero (-0 is left out: 0 is written without sign).
    static Expr signed_number_range(const Bound& lo, const Bound& hi) {
        const auto whole = [](const Bound& b) { return static_cast<int64_t>(*b.value); };
        std::optional<int64_t> top;
        if (hi.value) top = whole(hi);
        std::vector<Expr> parts;
        if (lo.value && whole(lo) >= 0)
            parts.push_back(number_range(whole(lo), lo.exclusive, top, hi.exclusive));
        else if (!top || *top > 0 || (*top == 0 && !hi.exclusive))
            parts.push_back(number_range(0, false, top, hi.exclusive));
        if (!lo.value || whole(lo) < 0) {
            std::optional<int64_t> deepest;
            if (lo.value) deepest = -whole(lo);
            const bool below_zero = top && *top < 0;
            parts.push_back(seq(
                {lit("-"), number_range(below_zero ? -*top : 0, below_zero ? hi.exclusive : true,
                                        deepest, lo.exclusive)}));
        }
        return alt(std::move(parts));
    }

    struct Member {
        std::string name;
        Expr value;
        bool required;
    };
    struct PropertyCounts {
        uint32_t lo = 0;
        uint32_t hi = kUnbounded;
    };
    Expr object_expr(const json& schema, int depth);
    PropertyCounts property_counts(const json& s);
    Expr object_members(const std::vector<Member>& members, const std::optional<Expr>& extra,
                        const PropertyCounts& n);
    Expr array_expr(const json& s, int depth);

    const json& root_;
    BranchOverlap overlap_;
    GrammarBuilder b_;
    std::map<std::string, std::string> ref_rules_;
    int object_count_ = 0;
    static constexpr size_t kMaxSubschemas = 20'000;
    // An object's rules are counted per member written, up to maxProperties.
    static constexpr int64_t kMaxCountedProperties = 64;
    // Objects with at most this many declared properties accept them in any order (a rule
    // per subset); larger ones in the schema's order.
    static constexpr size_t kAnyOrderMembers = 6;
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

Expr SchemaCompiler::object_expr(const json& schema, int depth) {
    const PatternRewrite rewritten = rewrite_pattern_properties(schema);
    const json& s = rewritten.schema;
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
    std::optional<Expr> extra;
    if (additional != false)
        extra = seq({lit("\""), rewritten.extra_names ? *rewritten.extra_names : none_of(names),
                     lit("\":"), schema_expr(additional, depth + 1)});
    return object_members(members, extra, property_counts(s));
}

// minProperties/maxProperties: the members an object may have.
SchemaCompiler::PropertyCounts SchemaCompiler::property_counts(const json& s) {
    PropertyCounts c;
    for (const char* key : {"minProperties", "maxProperties"}) {
        if (!s.contains(key)) continue;
        const int64_t v = std::max<int64_t>(*int_bound(s[key], key[1] == 'i'), 0);
        if (v > kMaxCountedProperties)
            fail(fmt::format("unsupported keyword '{}' (over {})", key, kMaxCountedProperties));
        (key[1] == 'i' ? c.lo : c.hi) = static_cast<uint32_t>(v);
    }
    return c;
}

// The declared members (in any order when there are few, else in the schema's order), then
// the additional ones. Rule (i, c): members from the i-th declared one on, c written so far
// (counted up to what the bounds need: at least 1, for the comma); for i past the last, the
// additional members.
Expr SchemaCompiler::object_members(const std::vector<Member>& members,
                                    const std::optional<Expr>& extra, const PropertyCounts& n) {
    if (n.hi != kUnbounded && n.lo > n.hi) return alt({});
    const uint32_t cap = n.hi != kUnbounded ? n.hi : std::max<uint32_t>(n.lo, 1);
    const int id = object_count_++;
    const auto rule = [&](size_t i, uint32_t c) { return fmt::format("obj{}_{}_{}", id, i, c); };
    const Expr extra_ref = ref(fmt::format("obj{}_extra", id));
    if (extra) b_.define(fmt::format("obj{}_extra", id), *extra);
    for (uint32_t c = 0; c <= cap; ++c) {
        const uint32_t need = n.lo > c ? n.lo - c : 0;
        const uint32_t room = n.hi == kUnbounded ? kUnbounded : n.hi - c;
        Expr tail = need > 0 ? alt({}) : empty();
        if (extra && room > 0) {
            Expr more = seq({c > 0 ? lit(",") : empty(), extra_ref,
                             repeat(seq({lit(","), extra_ref}), need > 0 ? need - 1 : 0,
                                    room == kUnbounded ? kUnbounded : room - 1)});
            tail = need > 0 ? std::move(more) : opt(std::move(more));
        }
        b_.define(rule(members.size(), c), std::move(tail));
    }
    const auto member = [&](size_t i, uint32_t written, const std::string& next) {
        return seq({written > 0 ? lit(",") : empty(), lit(json_quote(members[i].name) + ":"),
                    ref(fmt::format("obj{}_value{}", id, i)), ref(next)});
    };
    for (size_t i = 0; i < members.size(); ++i)
        b_.define(fmt::format("obj{}_value{}", id, i), members[i].value);
    if (members.size() <= kAnyOrderMembers) {
        // Few declared members: in any order, a rule per set of them written so far.
        uint32_t required = 0;
        for (size_t i = 0; i < members.size(); ++i) required |= uint32_t{members[i].required} << i;
        const auto set = [&](uint32_t mask) { return fmt::format("obj{}_set{}", id, mask); };
        for (uint32_t mask = 0; mask < (1u << members.size()); ++mask) {
            const uint32_t written = static_cast<uint32_t>(std::popcount(mask));
            std::vector<Expr> parts;
            for (size_t i = 0; i < members.size(); ++i)
                if (!((mask >> i) & 1) && (n.hi == kUnbounded || written < n.hi))
                    parts.push_back(member(i, written, set(mask | (1u << i))));
            if ((mask & required) == required)
                parts.push_back(ref(rule(members.size(), std::min(written, cap))));
            b_.define(set(mask), alt(std::move(parts)));
        }
        return seq({lit("{"), ref(set(0)), lit("}")});
    }
    for (size_t i = members.size(); i-- > 0;) {
        for (uint32_t c = 0; c <= cap; ++c) {
            std::vector<Expr> parts;
            if (c < cap || n.hi == kUnbounded)
                parts.push_back(member(i, c, rule(i + 1, std::min(c + 1, cap))));
            if (!members[i].required) parts.push_back(ref(rule(i + 1, c)));
            b_.define(rule(i, c), alt(std::move(parts)));
        }
    }
    return seq({lit("{"), ref(rule(0, 0)), lit("}")});
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
