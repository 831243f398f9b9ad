#include "template/json_value.h"

#include <algorithm>
#include <cmath>

#include "template/error.h"

namespace kite::tmpl {

Value from_json(const nlohmann::ordered_json& j) {
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null:
            return Value(None{});
        case nlohmann::ordered_json::value_t::boolean:
            return Value(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer:
            return Value(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned:
            if (j.get<uint64_t>() > uint64_t(INT64_MAX)) return Value(j.get<double>());
            return Value(static_cast<int64_t>(j.get<uint64_t>()));
        case nlohmann::ordered_json::value_t::number_float:
            return Value(j.get<double>());
        case nlohmann::ordered_json::value_t::string:
            return Value(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            List items;
            items.reserve(j.size());
            for (const auto& item : j) items.push_back(from_json(item));
            return Value(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            Dict d;
            d.items.reserve(j.size());
            for (const auto& [key, item] : j.items()) d.set(key, from_json(item));
            return Value(std::move(d));
        }
        default:
            return Value(None{});
    }
}

std::string json_key(const Value& key) {
    if (key.is_string()) return key.str();
    if (key.is_bool()) return key.as_bool() ? "true" : "false";
    if (key.is_none()) return "null";
    if (key.is_int()) return std::to_string(key.as_int());
    if (key.is_float()) {
        const double f = key.as_float();
        return std::isnan(f)   ? "NaN"
               : std::isinf(f) ? (f > 0 ? "Infinity" : "-Infinity")
                               : float_repr(f);
    }
    template_fail("TypeError: keys must be str, int, float, bool or None, not {}", key.type_name());
}

nlohmann::ordered_json to_json_value(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::None:
            return nullptr;
        case Value::Kind::Bool:
            return v.as_bool();
        case Value::Kind::Int:
            return v.as_int();
        case Value::Kind::Float:
            return v.as_float();
        case Value::Kind::String:
            return v.str();
        case Value::Kind::List: {
            if (v.is_generator()) break;
            auto a = nlohmann::ordered_json::array();
            for (const Value& item : v.list()) a.push_back(to_json_value(item));
            return a;
        }
        case Value::Kind::Dict: {
            if (v.dict().is_namespace) break;
            auto o = nlohmann::ordered_json::object();
            for (const auto& [key, item] : v.dict().items) o[json_key(key)] = to_json_value(item);
            return o;
        }
        default:
            break;
    }
    template_fail("TypeError: Object of type {} is not JSON serializable", v.type_name());
}

namespace {

constexpr int kMaxJsonDepth = 64;

void append_json_string(std::string& out, std::string_view s) {
    out += '"';
    for (char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20)
                    out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
                else
                    out += c;
        }
    }
    out += '"';
}

struct JsonWriter {
    int indent;
    bool sort_keys;
    std::string out;

    void newline(int depth) {
        out += '\n';
        out.append(static_cast<size_t>(indent * depth), ' ');
    }

    void write(const Value& v, int depth) {
        if (depth > kMaxJsonDepth) template_fail("ValueError: value nested too deeply for tojson");
        switch (v.kind()) {
            case Value::Kind::None:
                out += "null";
                return;
            case Value::Kind::Bool:
                out += v.as_bool() ? "true" : "false";
                return;
            case Value::Kind::Int:
                out += std::to_string(v.as_int());
                return;
            case Value::Kind::Float: {
                const double f = v.as_float();
                out += std::isnan(f)   ? "NaN"
                       : std::isinf(f) ? (f > 0 ? "Infinity" : "-Infinity")
                                       : float_repr(f);
                return;
            }
            case Value::Kind::String:
                append_json_string(out, v.str());
                return;
            case Value::Kind::List:
                if (v.is_generator()) break;
                write_list(v.list(), depth);
                return;
            case Value::Kind::Dict:
                if (v.dict().is_namespace) break;
                write_dict(v.dict(), depth);
                return;
            default:
                break;
        }
        template_fail("TypeError: Object of type {} is not JSON serializable", v.type_name());
    }

    void write_list(const List& items, int depth) {
        if (items.empty()) {
            out += "[]";
            return;
        }
        out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
            if (i > 0) out += indent >= 0 ? "," : ", ";
            if (indent >= 0) newline(depth + 1);
            write(items[i], depth + 1);
        }
        if (indent >= 0) newline(depth);
        out += ']';
    }

    void write_dict(const Dict& d, int depth) {
        if (d.items.empty()) {
            out += "{}";
            return;
        }
        std::vector<const std::pair<Value, Value>*> entries;
        for (const auto& entry : d.items) entries.push_back(&entry);
        // json.dumps sorts the keys themselves, so keys of mixed types raise as in Python.
        if (sort_keys)
            std::stable_sort(entries.begin(), entries.end(),
                             [](auto* a, auto* b) { return less(a->first, b->first); });
        out += '{';
        for (size_t i = 0; i < entries.size(); ++i) {
            if (i > 0) out += indent >= 0 ? "," : ", ";
            if (indent >= 0) newline(depth + 1);
            append_json_string(out, json_key(entries[i]->first));
            out += ": ";
            write(entries[i]->second, depth + 1);
        }
        if (indent >= 0) newline(depth);
        out += '}';
    }
};

}  // namespace

std::string to_json(const Value& v, int indent, bool sort_keys) {
    JsonWriter w{indent, sort_keys, {}};
    w.write(v, 0);
    return std::move(w.out);
}

}  // namespace kite::tmpl
