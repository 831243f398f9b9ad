#include "template/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "template/error.h"
#include "template/py_string.h"

namespace kite::tmpl {

const Value* Dict::find(std::string_view key) const {
    for (const auto& [k, v] : items)
        if (k.is_string() && k.str() == key) return &v;
    return nullptr;
}

const Value* Dict::find_key(const Value& key) const {
    require_hashable(key);
    if (key.is_string()) return find(key.str());
    for (const auto& [k, v] : items)
        if (equal(k, key)) return &v;
    return nullptr;
}

void Dict::set(Value key, Value value) {
    require_hashable(key);
    for (auto& [k, v] : items)
        if (equal(k, key)) {
            v = std::move(value);
            return;
        }
    items.emplace_back(std::move(key), std::move(value));
}

bool hashable(const Value& v) {
    if (v.is_dict() || v.is_generator()) return false;
    if (!v.is_list()) return true;
    if (!v.is_tuple()) return false;
    for (const Value& item : v.list())
        if (!hashable(item)) return false;
    return true;
}

void require_hashable(const Value& key) {
    if (hashable(key)) return;
    // A tuple is unhashable for the list or dict inside it; Python names that one.
    if (key.is_tuple())
        for (const Value& item : key.list()) require_hashable(item);
    template_fail("TypeError: unhashable type: '{}'", key.type_name());
}

Value Value::generator(List items) {
    Value v(std::move(items));
    v.generator_ = true;
    return v;
}

Value Value::tuple(List items) {
    Value v(std::move(items));
    v.tuple_ = true;
    return v;
}

Value Value::markup(std::string text) {
    Value v(std::move(text));
    v.markup_ = true;
    return v;
}

void Value::wrong_type(const char* wanted) const {
    template_fail("expected {}, got {}", wanted, type_name());
}

double Value::as_float() const {
    if (is_float()) return std::get<double>(v_);
    return static_cast<double>(as_int());
}

bool Value::truthy() const {
    switch (kind()) {
        case Kind::Undefined:
        case Kind::None:
            return false;
        case Kind::Bool:
            return as_bool();
        case Kind::Int:
            return as_int() != 0;
        case Kind::Float:
            return as_float() != 0;
        case Kind::String:
            return !str().empty();
        case Kind::List:
            return generator_ || !list().empty();
        case Kind::Dict:
            return dict().is_namespace || !dict().items.empty();
        case Kind::Function:
            return true;
    }
    return false;
}

const char* Value::type_name() const {
    switch (kind()) {
        case Kind::Undefined:
            return "Undefined";
        case Kind::None:
            return "NoneType";
        case Kind::Bool:
            return "bool";
        case Kind::Int:
            return "int";
        case Kind::Float:
            return "float";
        case Kind::String:
            return "str";
        case Kind::List:
            return generator_ ? "generator" : tuple_ ? "tuple" : "list";
        case Kind::Dict:
            return dict().is_namespace ? "Namespace" : "dict";
        case Kind::Function:
            return "function";
    }
    return "?";
}

std::string float_repr(double f) {
    if (std::isnan(f)) return "nan";
    if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
    // The shortest digits that round-trip, then Python's layout: positional for exponents
    // from -4 to 15, scientific otherwise.
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
    std::string sci(buf, end);
    const size_t e = sci.find('e');
    std::string mantissa = sci.substr(0, e);
    const int exponent = std::stoi(sci.substr(e + 1));
    const bool negative = mantissa[0] == '-';
    if (negative) mantissa.erase(0, 1);
    std::string digits;
    for (char c : mantissa)
        if (c != '.') digits += c;
    std::string out = negative ? "-" : "";
    if (exponent < -4 || exponent >= 16) {
        out.append(digits, 0, 1);
        if (digits.size() > 1) {
            out += '.';
            out.append(digits, 1);
        }
        out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
    } else if (exponent < 0) {
        out += "0.";
        out.append(static_cast<size_t>(-exponent - 1), '0');
        out += digits;
    } else {
        const auto point = static_cast<size_t>(exponent + 1);
        if (digits.size() <= point) {
            out += digits;
            out.append(point - digits.size(), '0');
            out += ".0";
        } else {
            out.append(digits, 0, point);
            out += '.';
            out.append(digits, point);
        }
    }
    return out;
}

namespace {

constexpr int kMaxReprDepth = 64;

void append_repr(std::string& out, const Value& v, int depth);

void append_items(std::string& out, const Value& v, int depth) {
    if (depth > kMaxReprDepth) template_fail("RecursionError: value nested too deeply to print");
    if (v.is_list()) {
        out += v.is_tuple() ? '(' : '[';
        bool first = true;
        for (const Value& item : v.list()) {
            if (!first) out += ", ";
            first = false;
            append_repr(out, item, depth + 1);
        }
        if (v.is_tuple() && v.list().size() == 1) out += ',';  // (1,): a one-item tuple
        out += v.is_tuple() ? ')' : ']';
        return;
    }
    out += v.dict().is_namespace ? "<Namespace {" : "{";
    bool first = true;
    for (const auto& [key, item] : v.dict().items) {
        if (!first) out += ", ";
        first = false;
        append_repr(out, key, depth + 1);
        out += ": ";
        append_repr(out, item, depth + 1);
    }
    out += v.dict().is_namespace ? "}>" : "}";
}

void append_repr(std::string& out, const Value& v, int depth) {
    if (v.is_string()) {
        out += py_str_repr(v.str());
    } else if (v.is_undefined()) {
        out += "Undefined";  // jinja2's Undefined.__repr__; its str() is empty
    } else if ((v.is_list() && !v.is_generator()) || v.is_dict()) {
        append_items(out, v, depth);
    } else {
        out += to_str(v);
    }
}

}  // namespace

std::string to_str(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
            return "";
        case Value::Kind::None:
            return "None";
        case Value::Kind::Bool:
            return v.as_bool() ? "True" : "False";
        case Value::Kind::Int:
            return std::to_string(v.as_int());
        case Value::Kind::Float:
            return float_repr(v.as_float());
        case Value::Kind::String:
            return v.str();
        case Value::Kind::List:
            if (v.is_generator()) return "<generator object>";
            [[fallthrough]];
        case Value::Kind::Dict: {
            std::string out;
            append_items(out, v, 0);
            return out;
        }
        case Value::Kind::Function:
            return "<function " + v.function().name + ">";
    }
    return "";
}

std::string to_repr(const Value& v) {
    std::string out;
    append_repr(out, v, 0);
    return out;
}

bool equal(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Value::Kind::Undefined:
        case Value::Kind::None:
            return true;
        case Value::Kind::String:
            return a.str() == b.str();
        case Value::Kind::List: {
            const List &x = a.list(), &y = b.list();
            if (x.size() != y.size() || a.is_tuple() != b.is_tuple()) return false;
            for (size_t i = 0; i < x.size(); ++i)
                if (!equal(x[i], y[i])) return false;
            return true;
        }
        case Value::Kind::Dict: {
            const Dict &x = a.dict(), &y = b.dict();
            if (x.items.size() != y.items.size()) return false;
            for (const auto& [key, item] : x.items) {
                const Value* other = y.find_key(key);
                if (!other || !equal(item, *other)) return false;
            }
            return true;
        }
        case Value::Kind::Function:
            return &a.function() == &b.function();
        default:
            return false;
    }
}

bool less(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_float() < b.as_float();
        return a.as_int() < b.as_int();
    }
    if (a.is_string() && b.is_string()) return a.str() < b.str();
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        const List &x = a.list(), &y = b.list();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (!equal(x[i], y[i])) return less(x[i], y[i]);
        }
        return x.size() < y.size();
    }
    template_fail("TypeError: '<' not supported between instances of '{}' and '{}'", a.type_name(),
                  b.type_name());
}

bool contains(const Value& haystack, const Value& needle) {
    if (haystack.is_string()) {
        if (!needle.is_string())
            template_fail("TypeError: 'in <string>' requires string as left operand, not {}",
                          needle.type_name());
        return haystack.str().find(needle.str()) != std::string::npos;
    }
    if (haystack.is_list()) {
        for (const Value& item : haystack.list())
            if (equal(item, needle)) return true;
        return false;
    }
    if (haystack.is_dict()) return haystack.dict().find_key(needle) != nullptr;
    // Undefined iterates as empty, so nothing is in it.
    if (haystack.is_undefined()) return false;
    template_fail("TypeError: argument of type '{}' is not iterable", haystack.type_name());
}

int64_t length(const Value& v) {
    if (v.is_string()) return static_cast<int64_t>(code_point_count(v.str()));
    if (v.is_list() && !v.is_generator()) return static_cast<int64_t>(v.list().size());
    if (v.is_dict() && !v.dict().is_namespace) return static_cast<int64_t>(v.dict().items.size());
    if (v.is_undefined()) return 0;
    template_fail("TypeError: object of type '{}' has no len()", v.type_name());
}

List iterate(const Value& v) {
    if (v.is_list()) return v.list();
    if (v.is_dict() && !v.dict().is_namespace) {
        List keys;
        keys.reserve(v.dict().items.size());
        for (const auto& [key, item] : v.dict().items) keys.push_back(key);
        return keys;
    }
    if (v.is_string()) {
        List chars;
        for (std::string_view cp : code_points(v.str())) chars.emplace_back(cp);
        return chars;
    }
    if (v.is_undefined()) return {};
    template_fail("TypeError: '{}' object is not iterable", v.type_name());
}

}  // namespace kite::tmpl
