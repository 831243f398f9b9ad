#include "template/tests.h"

#include "template/call_args.h"
#include "template/error.h"
#include "template/py_string.h"
#include "template/renderer.h"

namespace kite::tmpl {

bool apply_test(const std::string& name, const Value& v, CallArgs& args, Renderer& r) {
    (void)r;
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "string") return v.is_string();
    if (name == "mapping") return v.is_dict() && !v.dict().is_namespace;
    if (name == "sequence")
        return v.is_string() || (v.is_list() && !v.is_generator()) ||
               (v.is_dict() && !v.dict().is_namespace);
    if (name == "iterable")
        return v.is_string() || v.is_list() || (v.is_dict() && !v.dict().is_namespace);
    if (name == "number") return v.is_number();
    if (name == "integer") return v.is_int();
    if (name == "float") return v.is_float();
    if (name == "boolean") return v.is_bool();
    if (name == "true") return v.is_bool() && v.as_bool();
    if (name == "false") return v.is_bool() && !v.as_bool();
    if (name == "callable") return v.is_function();
    if (name == "lower") return v.is_string() && py_lower(v.str()) == v.str();
    if (name == "upper") return v.is_string() && py_upper(v.str()) == v.str();
    if (name == "odd" || name == "even" || name == "divisibleby") {
        if (!v.is_int() && !v.is_bool()) template_fail("TypeError: '{}' needs an integer", name);
        if (name == "divisibleby") {
            const int64_t d = int_arg(args, 0, "num", 1, "divisibleby");
            if (d == 0) template_fail("ZeroDivisionError: divisibleby(0)");
            return v.as_int() % d == 0;
        }
        return (v.as_int() % 2 != 0) == (name == "odd");
    }
    const Value other = arg(args, 0, "other");
    if (name == "eq" || name == "equalto" || name == "==") return equal(v, other);
    if (name == "ne" || name == "!=") return !equal(v, other);
    if (name == "lt" || name == "lessthan" || name == "<") return less(v, other);
    if (name == "gt" || name == "greaterthan" || name == ">") return less(other, v);
    if (name == "le" || name == "<=") return !less(other, v);
    if (name == "ge" || name == ">=") return !less(v, other);
    if (name == "in") return contains(other, v);
    if (name == "sameas")
        return v.kind() == other.kind() && (v.is_none() || v.is_undefined() || equal(v, other)) &&
               !v.is_list() && !v.is_dict();
    template_fail("TemplateRuntimeError: no test named '{}'", name);
}

}  // namespace kite::tmpl
