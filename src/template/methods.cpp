#include "template/methods.h"

#include <set>

#include "template/call_args.h"
#include "template/error.h"
#include "template/py_string.h"

namespace kite::tmpl {

namespace {

using Method = Value (*)(const Value& self, CallArgs& args);

std::optional<std::string> optional_string(const CallArgs& args, size_t position,
                                           std::string_view name) {
    Value v = arg(args, position, name);
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_string()) template_fail("TypeError: expected a string for '{}'", name);
    return v.str();
}

Value string_list(std::vector<std::string> parts) {
    List out;
    out.reserve(parts.size());
    for (std::string& p : parts) out.emplace_back(std::move(p));
    return Value(std::move(out));
}

// startswith/endswith take a string or a tuple of strings.
bool affix_matches(const Value& self, const Value& affix, bool prefix) {
    if (affix.is_list()) {
        for (const Value& a : affix.list())
            if (affix_matches(self, a, prefix)) return true;
        return false;
    }
    if (!affix.is_string())
        template_fail("TypeError: {} arg must be str or a tuple of str",
                      prefix ? "startswith" : "endswith");
    return prefix ? self.str().starts_with(affix.str()) : self.str().ends_with(affix.str());
}

Value str_method(const std::string& name, const Value& self, CallArgs& a) {
    const std::string& s = self.str();
    if (name == "strip") return Value(py_strip(s, optional_string(a, 0, "chars"), true, true));
    if (name == "lstrip") return Value(py_strip(s, optional_string(a, 0, "chars"), true, false));
    if (name == "rstrip") return Value(py_strip(s, optional_string(a, 0, "chars"), false, true));
    if (name == "split")
        return string_list(
            py_split(s, optional_string(a, 0, "sep"), int_arg(a, 1, "maxsplit", -1, "split")));
    if (name == "rsplit")
        return string_list(
            py_rsplit(s, optional_string(a, 0, "sep"), int_arg(a, 1, "maxsplit", -1, "rsplit")));
    if (name == "splitlines") {
        std::vector<std::string> lines = py_split(s, std::string("\n"), -1);
        if (!lines.empty() && lines.back().empty()) lines.pop_back();
        return string_list(std::move(lines));
    }
    if (name == "startswith") return Value(affix_matches(self, arg(a, 0, "prefix"), true));
    if (name == "endswith") return Value(affix_matches(self, arg(a, 0, "suffix"), false));
    if (name == "upper") return Value(py_upper(s));
    if (name == "lower") return Value(py_lower(s));
    if (name == "title") return Value(py_title(s));
    if (name == "capitalize") return Value(py_capitalize(s));
    if (name == "replace")
        return Value(py_replace(s, string_arg(a, 0, "old", "replace"),
                                string_arg(a, 1, "new", "replace"),
                                int_arg(a, 2, "count", -1, "replace")));
    if (name == "find" || name == "rfind" || name == "count") {
        const std::string sub = string_arg(a, 0, "sub", name);
        if (name == "count") {
            if (sub.empty()) return Value(static_cast<int64_t>(code_point_count(s) + 1));
            int64_t n = 0;
            for (size_t at = s.find(sub); at != std::string::npos;
                 at = s.find(sub, at + sub.size()))
                ++n;
            return Value(n);
        }
        const size_t at = name == "find" ? s.find(sub) : s.rfind(sub);
        return Value(at == std::string::npos
                         ? int64_t{-1}
                         : static_cast<int64_t>(code_point_count(s.substr(0, at))));
    }
    if (name == "join") {
        std::string out;
        bool first = true;
        for (const Value& item : iterate(arg(a, 0, "iterable"))) {
            if (!item.is_string()) template_fail("TypeError: join expects strings");
            if (!first) out += s;
            first = false;
            out += item.str();
        }
        return Value(std::move(out));
    }
    auto all = [&](auto pred) {
        if (s.empty()) return Value(false);
        for (char c : s)
            if (!pred(static_cast<unsigned char>(c))) return Value(false);
        return Value(true);
    };
    if (name == "isdigit") return all([](unsigned char c) { return c >= '0' && c <= '9'; });
    if (name == "isalpha") return all([](unsigned char c) { return std::isalpha(c) != 0; });
    if (name == "isalnum") return all([](unsigned char c) { return std::isalnum(c) != 0; });
    if (name == "isspace") return all([](unsigned char c) { return std::isspace(c) != 0; });
    if (name == "islower") return Value(py_lower(s) == s && py_upper(s) != s);
    if (name == "isupper") return Value(py_upper(s) == s && py_lower(s) != s);
    template_fail("AttributeError: 'str' object has no attribute '{}'", name);
}

Value dict_method(const std::string& name, const Value& self, CallArgs& a) {
    const Dict& d = self.dict();
    if (name == "items") {
        List out;
        out.reserve(d.items.size());
        for (const auto& [key, value] : d.items) out.emplace_back(List{Value(key), value});
        return Value(std::move(out));
    }
    if (name == "keys" || name == "values") {
        List out;
        for (const auto& [key, value] : d.items) out.push_back(name == "keys" ? Value(key) : value);
        return Value(std::move(out));
    }
    // get(key, default=None)
    const Value key = arg(a, 0, "key");
    const Value* found = key.is_string() ? d.find(key.str()) : nullptr;
    return found ? *found : arg(a, 1, "default", Value(None{}));
}

Value list_method(const std::string& name, const Value& self, CallArgs& a) {
    const Value needle = arg(a, 0, "value");
    const List& items = self.list();
    int64_t count = 0;
    for (size_t i = 0; i < items.size(); ++i) {
        if (!equal(items[i], needle)) continue;
        if (name == "index") return Value(static_cast<int64_t>(i));
        ++count;
    }
    if (name == "index") template_fail("ValueError: {} is not in list", to_repr(needle));
    return Value(count);
}

const std::set<std::string, std::less<>> kStrMethods{
    "strip", "lstrip",  "rstrip",  "split",      "rsplit",  "splitlines", "startswith", "endswith",
    "upper", "lower",   "title",   "capitalize", "replace", "find",       "rfind",      "count",
    "join",  "isdigit", "isalpha", "isalnum",    "isspace", "islower",    "isupper"};
const std::set<std::string, std::less<>> kDictMethods{"items", "keys", "values", "get"};
const std::set<std::string, std::less<>> kListMethods{"index", "count"};
// What Jinja2's immutable sandbox refuses: methods that change a list or dict in place.
const std::set<std::string, std::less<>> kListMutators{"append", "extend", "insert", "pop",
                                                       "remove", "clear",  "sort",   "reverse"};
const std::set<std::string, std::less<>> kDictMutators{"update", "pop", "popitem", "setdefault",
                                                       "clear"};

Value bind(const Value& self, const std::string& name,
           Value (*impl)(const std::string&, const Value&, CallArgs&)) {
    auto f = std::make_shared<Function>();
    f->name = name;
    f->call = [self, name, impl](CallArgs& a, Renderer&) { return impl(name, self, a); };
    return Value(f);
}

}  // namespace

std::optional<Value> method(const Value& object, const std::string& name) {
    if (object.is_string() && kStrMethods.count(name)) return bind(object, name, str_method);
    if (object.is_dict() && !object.dict().is_namespace) {
        if (kDictMethods.count(name)) return bind(object, name, dict_method);
        if (kDictMutators.count(name))
            return Value(Undefined{"SecurityError: access to attribute '" + name +
                                   "' of 'dict' object is unsafe."});
    }
    if (object.is_list() && !object.is_generator()) {
        if (kListMethods.count(name)) return bind(object, name, list_method);
        if (kListMutators.count(name))
            return Value(Undefined{"SecurityError: access to attribute '" + name +
                                   "' of 'list' object is unsafe."});
    }
    return std::nullopt;
}

}  // namespace kite::tmpl
