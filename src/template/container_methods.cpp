// The list, tuple and dict methods jinja2's immutable sandbox lets templates call: the ones
// that read. Those that change a list or dict in place are refused in methods.cpp.
#include <algorithm>

#include "template/error.h"
#include "template/method_table.h"

namespace kite::tmpl {

namespace {

// list.index(value, start, stop): start and stop count from the end when negative.
Value list_index(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 1, 3, "index");
    const Value needle = arg(a, 0, "value");
    const List& items = self.list();
    const auto size = static_cast<int64_t>(items.size());
    auto bound = [&](size_t i, int64_t fallback) {
        const Value v = arg(a, i, "");
        if (v.is_undefined()) return fallback;
        if (!v.is_int() && !v.is_bool())
            template_fail("TypeError: slice indices must be integers or have an __index__ method");
        const int64_t x = v.as_int();
        return std::clamp<int64_t>(x < 0 ? x + size : x, 0, size);
    };
    const int64_t start = bound(1, 0), stop = bound(2, size);
    for (int64_t i = start; i < stop; ++i)
        if (equal(items[static_cast<size_t>(i)], needle)) return Value(i);
    template_fail("ValueError: {} is not in {}", to_repr(needle),
                  self.is_tuple() ? "tuple" : "list");
}

Value list_count(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 1, 1, "count");
    const Value needle = arg(a, 0, "value");
    const List& items = self.list();
    return Value(static_cast<int64_t>(std::count_if(
        items.begin(), items.end(), [&](const Value& v) { return equal(v, needle); })));
}

Value list_copy(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 0, 0, "copy");
    return Value(self.list());
}

Value dict_get(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 1, 2, "get");
    const Value* found = self.dict().find_key(arg(a, 0, "key"));
    return found ? *found : arg(a, 1, "default", Value(None{}));
}

// items(), keys() and values() as lists: views print differently in Python, but iterate,
// index through |list, and measure the same.
Value dict_items(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 0, 0, "items");
    List out;
    out.reserve(self.dict().items.size());
    for (const auto& [key, value] : self.dict().items) out.push_back(Value::tuple({key, value}));
    return Value(std::move(out));
}

Value dict_keys(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 0, 0, "keys");
    List out;
    for (const auto& [key, value] : self.dict().items) out.push_back(key);
    return Value(std::move(out));
}

Value dict_values(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 0, 0, "values");
    List out;
    for (const auto& [key, value] : self.dict().items) out.push_back(value);
    return Value(std::move(out));
}

Value dict_copy(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 0, 0, "copy");
    Dict copy;
    copy.items = self.dict().items;
    return Value(std::move(copy));
}

const MethodTable kListMethods{{"index", list_index}, {"count", list_count}, {"copy", list_copy}};
const MethodTable kDictMethods{{"get", dict_get},
                               {"items", dict_items},
                               {"keys", dict_keys},
                               {"values", dict_values},
                               {"copy", dict_copy}};

}  // namespace

const MethodTable& list_methods() {
    return kListMethods;
}

const MethodTable& dict_methods() {
    return kDictMethods;
}

}  // namespace kite::tmpl
