#include "template/tests.h"

#include <string_view>
#include <unordered_map>

#include "template/call_args.h"
#include "template/error.h"
#include "template/py_string.h"
#include "template/renderer.h"

namespace kite::tmpl {

namespace {

bool is_mapping(const Value& v) {
    return v.is_dict() && !v.dict().is_namespace;
}

int64_t integer_subject(const Value& v, std::string_view test) {
    if (!v.is_int() && !v.is_bool()) template_fail("TypeError: '{}' needs an integer", test);
    return v.as_int();
}

Value other(const CallArgs& args) {
    return arg(args, 0, "other");
}

bool divisible_by(const Value& v, const CallArgs& args) {
    const int64_t n = integer_subject(v, "divisibleby");
    const int64_t d = int_arg(args, 0, "num", 1, "divisibleby");
    if (d == 0) template_fail("ZeroDivisionError: divisibleby(0)");
    return n % d == 0;
}

bool same_as(const Value& v, const CallArgs& args) {
    const Value o = other(args);
    return v.kind() == o.kind() && (v.is_none() || v.is_undefined() || equal(v, o)) &&
           !v.is_list() && !v.is_dict();
}

using Test = bool (*)(const Value& subject, const CallArgs& args);

// Every test by its name (aliases and operator spellings included), as Jinja2's
// DEFAULT_TESTS names them.
const std::unordered_map<std::string_view, Test> kTests{
    {"defined", [](const Value& v, const CallArgs&) { return !v.is_undefined(); }},
    {"undefined", [](const Value& v, const CallArgs&) { return v.is_undefined(); }},
    {"none", [](const Value& v, const CallArgs&) { return v.is_none(); }},
    {"string", [](const Value& v, const CallArgs&) { return v.is_string(); }},
    {"mapping", [](const Value& v, const CallArgs&) { return is_mapping(v); }},
    {"sequence",
     [](const Value& v, const CallArgs&) {
         return v.is_string() || (v.is_list() && !v.is_generator()) || is_mapping(v);
     }},
    {"iterable",
     [](const Value& v, const CallArgs&) { return v.is_string() || v.is_list() || is_mapping(v); }},
    {"number", [](const Value& v, const CallArgs&) { return v.is_number(); }},
    {"integer", [](const Value& v, const CallArgs&) { return v.is_int(); }},
    {"float", [](const Value& v, const CallArgs&) { return v.is_float(); }},
    {"boolean", [](const Value& v, const CallArgs&) { return v.is_bool(); }},
    {"true", [](const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }},
    {"false", [](const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }},
    {"callable", [](const Value& v, const CallArgs&) { return v.is_function(); }},
    {"lower",
     [](const Value& v, const CallArgs&) { return v.is_string() && py_lower(v.str()) == v.str(); }},
    {"upper",
     [](const Value& v, const CallArgs&) { return v.is_string() && py_upper(v.str()) == v.str(); }},
    {"odd", [](const Value& v, const CallArgs&) { return integer_subject(v, "odd") % 2 != 0; }},
    {"even", [](const Value& v, const CallArgs&) { return integer_subject(v, "even") % 2 == 0; }},
    {"divisibleby", divisible_by},
    {"eq", [](const Value& v, const CallArgs& a) { return equal(v, other(a)); }},
    {"equalto", [](const Value& v, const CallArgs& a) { return equal(v, other(a)); }},
    {"==", [](const Value& v, const CallArgs& a) { return equal(v, other(a)); }},
    {"ne", [](const Value& v, const CallArgs& a) { return !equal(v, other(a)); }},
    {"!=", [](const Value& v, const CallArgs& a) { return !equal(v, other(a)); }},
    {"lt", [](const Value& v, const CallArgs& a) { return less(v, other(a)); }},
    {"lessthan", [](const Value& v, const CallArgs& a) { return less(v, other(a)); }},
    {"<", [](const Value& v, const CallArgs& a) { return less(v, other(a)); }},
    {"gt", [](const Value& v, const CallArgs& a) { return less(other(a), v); }},
    {"greaterthan", [](const Value& v, const CallArgs& a) { return less(other(a), v); }},
    {">", [](const Value& v, const CallArgs& a) { return less(other(a), v); }},
    {"le", [](const Value& v, const CallArgs& a) { return !less(other(a), v); }},
    {"<=", [](const Value& v, const CallArgs& a) { return !less(other(a), v); }},
    {"ge", [](const Value& v, const CallArgs& a) { return !less(v, other(a)); }},
    {">=", [](const Value& v, const CallArgs& a) { return !less(v, other(a)); }},
    {"in", [](const Value& v, const CallArgs& a) { return contains(other(a), v); }},
    {"sameas", same_as},
};

}  // namespace

bool apply_test(const std::string& name, const Value& v, CallArgs& args, Renderer& r) {
    (void)r;
    const auto found = kTests.find(name);
    if (found == kTests.end()) template_fail("TemplateRuntimeError: no test named '{}'", name);
    return found->second(v, args);
}

}  // namespace kite::tmpl
