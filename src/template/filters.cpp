#include "template/filters.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "template/call_args.h"
#include "template/error.h"
#include "template/json_value.h"
#include "template/py_string.h"
#include "template/renderer.h"
#include "template/tests.h"

namespace kite::tmpl {

namespace {

// Jinja2's attribute getter for filters: "a.b.0" looks up a, then b, then item 0.
Value get_path(Renderer& r, Value v, const std::string& path) {
    for (const std::string& part : py_split(path, std::string("."), -1)) {
        const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
        int64_t index = 0;
        const bool is_index =
            digits &&
            std::from_chars(part.data(), part.data() + part.size(), index).ec == std::errc();
        v = is_index ? r.get_item(v, Value(index)) : r.get_item(v, Value(part));
    }
    return v;
}

List items_of(const Value& v) {
    if (v.is_undefined()) return {};
    if (!v.is_dict()) template_fail("TypeError: can only get item pairs from a mapping");
    List out;
    for (const auto& [key, value] : v.dict().items) out.push_back(Value::tuple({key, value}));
    return out;
}

// indent(width=4, first=False, blank=False), as Jinja2 3.1 writes it.
std::string indent(const std::string& s, const Value& width, bool first, bool blank) {
    std::string pad;
    if (width.is_string()) {
        pad = width.str();
    } else {
        const int64_t n = width.as_int();
        if (n < 0 || n > 1024) template_fail("indent: width out of range");
        pad.assign(static_cast<size_t>(n), ' ');
    }
    std::vector<std::string> lines = py_split(s + "\n", std::string("\n"), -1);
    lines.pop_back();  // splitlines() of text ending in a newline
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) out += '\n';
        const bool indented = i > 0 && (blank || !lines[i].empty());
        if (indented) out += pad;
        out += lines[i];
    }
    if (first) out = pad + out;
    return out;
}

// select/reject/selectattr/rejectattr: which items pass the test (or are true, without one).
Value select_items(const Value& seq, CallArgs& args, Renderer& r, bool with_attribute, bool keep) {
    if (!seq.truthy()) return Value::generator({});  // Jinja2 skips a false sequence
    size_t next = 0;
    std::string attribute;
    if (with_attribute) {
        if (args.positional.empty()) template_fail("TypeError: selectattr needs an attribute");
        attribute = to_str(args.positional[next++]);
    }
    std::string test;
    if (next < args.positional.size()) test = to_str(args.positional[next++]);
    CallArgs test_args;
    test_args.positional.assign(args.positional.begin() + static_cast<ptrdiff_t>(next),
                                args.positional.end());
    List out;
    for (const Value& item : iterate(seq)) {
        const Value subject = with_attribute ? get_path(r, item, attribute) : item;
        const bool passes =
            test.empty() ? subject.truthy() : apply_test(test, subject, test_args, r);
        if (passes == keep) out.push_back(item);
    }
    return Value::generator(std::move(out));
}

Value map_items(const Value& seq, CallArgs& args, Renderer& r) {
    List out;
    if (!seq.truthy()) return Value::generator({});  // Jinja2 skips a false sequence
    const Value attribute = arg(args, 99, "attribute");
    if (!attribute.is_undefined()) {
        const Value fallback = arg(args, 99, "default");
        for (const Value& item : iterate(seq)) {
            Value v = get_path(r, item, to_str(attribute));
            out.push_back(v.is_undefined() && !fallback.is_undefined() ? fallback : v);
        }
        return Value::generator(std::move(out));
    }
    if (args.positional.empty()) template_fail("TypeError: map needs a filter or an attribute");
    const std::string filter = to_str(args.positional[0]);
    CallArgs filter_args;
    filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
    filter_args.keyword = args.keyword;
    for (const Value& item : iterate(seq))
        out.push_back(apply_filter(filter, item, filter_args, r));
    return Value::generator(std::move(out));
}

Value sorted_items(const Value& seq, CallArgs& args, Renderer& r) {
    const bool reverse = arg(args, 0, "reverse", Value(false)).truthy();
    const bool case_sensitive = arg(args, 1, "case_sensitive", Value(false)).truthy();
    const Value attribute = arg(args, 2, "attribute");
    List items = iterate(seq);
    auto key = [&](const Value& v) {
        Value k = attribute.is_undefined() ? v : get_path(r, v, to_str(attribute));
        return !case_sensitive && k.is_string() ? Value(py_lower(k.str())) : k;
    };
    std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
        return reverse ? less(key(b), key(a)) : less(key(a), key(b));
    });
    return Value(std::move(items));
}

Value dictsort(const Value& v, CallArgs& args) {
    const bool case_sensitive = arg(args, 0, "case_sensitive", Value(false)).truthy();
    const Value by = arg(args, 1, "by", Value("key"));
    const bool reverse = arg(args, 2, "reverse", Value(false)).truthy();
    if (v.is_undefined()) template_fail("UndefinedError: {}", v.undefined_hint());
    List pairs = items_of(v);
    const size_t field = by.is_string() && by.str() == "value" ? 1 : 0;
    auto key = [&](const Value& pair) {
        const Value& k = pair.list()[field];
        return !case_sensitive && k.is_string() ? Value(py_lower(k.str())) : k;
    };
    std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& a, const Value& b) {
        return reverse ? less(key(b), key(a)) : less(key(a), key(b));
    });
    return Value(std::move(pairs));
}

Value unique_items(const Value& seq) {
    List out;
    for (const Value& item : iterate(seq)) {
        const Value k = item.is_string() ? Value(py_lower(item.str())) : item;
        bool seen = false;
        for (const Value& o : out)
            seen = seen || equal(o.is_string() ? Value(py_lower(o.str())) : o, k);
        if (!seen) out.push_back(item);
    }
    return Value::generator(std::move(out));
}

Value extreme(const Value& seq, bool want_max) {
    List items = iterate(seq);
    if (items.empty()) return Value(Undefined{"no items"});
    Value best = items[0];
    for (const Value& item : items)
        if (want_max ? less(best, item) : less(item, best)) best = item;
    return best;
}

// int(f) truncates; Python's integers hold any finite float, an int64 only those below 2^63.
Value float_to_int(double f) {
    if (!(f >= -0x1p63 && f < 0x1p63)) template_fail("OverflowError: {} is too large for int", f);
    return Value(static_cast<int64_t>(f));
}

Value to_int(const Value& v, CallArgs& args) {
    const Value fallback = arg(args, 0, "default", Value(int64_t{0}));
    if (v.is_int() || v.is_bool()) return Value(v.as_int());
    if (v.is_float()) return std::isfinite(v.as_float()) ? float_to_int(v.as_float()) : fallback;
    if (v.is_string()) {
        try {
            size_t end = 0;
            const std::string s = py_strip(v.str(), std::nullopt, true, true);
            const long long n = std::stoll(s, &end);
            if (end == s.size()) return Value(static_cast<int64_t>(n));
            const double f = std::stod(s, &end);
            if (end == s.size()) return float_to_int(f);
        } catch (const std::logic_error&) {  // stoll/stod: not a number, or out of range
        }
    }
    return fallback;
}

Value to_float(const Value& v, CallArgs& args) {
    const Value fallback = arg(args, 0, "default", Value(0.0));
    if (v.is_number()) return Value(v.as_float());
    if (v.is_string()) {
        try {
            size_t end = 0;
            const std::string s = py_strip(v.str(), std::nullopt, true, true);
            const double f = std::stod(s, &end);
            if (end == s.size()) return Value(f);
        } catch (const std::logic_error&) {  // stod: not a number, or out of range
        }
    }
    return fallback;
}

Value tojson(const Value& v, CallArgs& args) {
    const Value ind = arg(args, 0, "indent", Value(None{}));
    int indent = -1;
    if (!ind.is_none()) {
        if (!ind.is_int() || ind.as_int() < 0 || ind.as_int() > 64)
            template_fail("tojson: indent must be an integer from 0 to 64");
        indent = static_cast<int>(ind.as_int());
    }
    return Value(to_json(v, indent, arg(args, 99, "sort_keys", Value(false)).truthy()));
}

Value length_of(const Value& v, CallArgs&, Renderer&) {
    return Value(length(v));
}

Value string_of(const Value& v, CallArgs&, Renderer&) {
    return Value(to_str(v));
}

Value safe(const Value& v, CallArgs&, Renderer&) {
    return v.is_markup() ? v : Value::markup(to_str(v));
}

Value escape(const Value& v, CallArgs&, Renderer&) {
    return v.is_markup() ? v : Value::markup(html_escape(to_str(v)));
}

Value trim(const Value& v, CallArgs& args, Renderer&) {
    const Value chars = arg(args, 0, "chars", Value(None{}));
    return Value(py_strip(to_str(v), chars.is_string() ? std::optional(chars.str()) : std::nullopt,
                          true, true));
}

Value default_value(const Value& v, CallArgs& args, Renderer&) {
    const bool boolean = arg(args, 1, "boolean", Value(false)).truthy();
    const bool use_fallback = v.is_undefined() || (boolean && !v.truthy());
    return use_fallback ? arg(args, 0, "default_value", Value("")) : v;
}

Value join(const Value& v, CallArgs& args, Renderer& r) {
    const std::string sep = to_str(arg(args, 0, "d", Value("")));
    const Value attribute = arg(args, 1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& item : iterate(v)) {
        if (!first) out += sep;
        first = false;
        out += to_str(attribute.is_undefined() ? item : get_path(r, item, to_str(attribute)));
        r.check_size(out.size());
    }
    return Value(std::move(out));
}

Value items(const Value& v, CallArgs&, Renderer&) {
    return Value(items_of(v));
}

Value list_of(const Value& v, CallArgs&, Renderer&) {
    return Value(iterate(v));
}

Value lower(const Value& v, CallArgs&, Renderer&) {
    return Value(py_lower(to_str(v)));
}

Value upper(const Value& v, CallArgs&, Renderer&) {
    return Value(py_upper(to_str(v)));
}

Value title(const Value& v, CallArgs&, Renderer&) {
    return Value(py_title(to_str(v)));
}

Value capitalize(const Value& v, CallArgs&, Renderer&) {
    return Value(py_capitalize(to_str(v)));
}

Value replace(const Value& v, CallArgs& args, Renderer&) {
    const Value count = arg(args, 2, "count", Value(None{}));
    return Value(py_replace(to_str(v), to_str(arg(args, 0, "old")), to_str(arg(args, 1, "new")),
                            count.is_none() ? -1 : count.as_int()));
}

Value indent_filter(const Value& v, CallArgs& args, Renderer&) {
    return Value(indent(to_str(v), arg(args, 0, "width", Value(int64_t{4})),
                        arg(args, 1, "first", Value(false)).truthy(),
                        arg(args, 2, "blank", Value(false)).truthy()));
}

Value dictsort_filter(const Value& v, CallArgs& args, Renderer&) {
    return dictsort(v, args);
}

Value selectattr(const Value& v, CallArgs& args, Renderer& r) {
    return select_items(v, args, r, true, true);
}

Value rejectattr(const Value& v, CallArgs& args, Renderer& r) {
    return select_items(v, args, r, true, false);
}

Value select(const Value& v, CallArgs& args, Renderer& r) {
    return select_items(v, args, r, false, true);
}

Value reject(const Value& v, CallArgs& args, Renderer& r) {
    return select_items(v, args, r, false, false);
}

Value first(const Value& v, CallArgs&, Renderer&) {
    List items = iterate(v);
    if (items.empty()) return Value(Undefined{"the sequence is empty"});
    return items.front();
}

Value last(const Value& v, CallArgs&, Renderer&) {
    if (v.is_generator()) template_fail("TypeError: cannot reverse a generator");
    List items = iterate(v);
    if (items.empty()) return Value(Undefined{"the sequence is empty"});
    return items.back();
}

Value reverse(const Value& v, CallArgs&, Renderer&) {
    if (v.is_string()) {
        std::string out;
        auto cps = code_points(v.str());
        for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
        return Value(std::move(out));
    }
    List items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
}

Value unique(const Value& v, CallArgs&, Renderer&) {
    return unique_items(v);
}

Value min_of(const Value& v, CallArgs&, Renderer&) {
    return extreme(v, false);
}

Value max_of(const Value& v, CallArgs&, Renderer&) {
    return extreme(v, true);
}

Value sum(const Value& v, CallArgs& args, Renderer& r) {
    Value total = arg(args, 1, "start", Value(int64_t{0}));
    const Value attribute = arg(args, 0, "attribute");
    for (const Value& item : iterate(v)) {
        const Value x = attribute.is_undefined() ? item : get_path(r, item, to_str(attribute));
        if (!x.is_number() || !total.is_number()) template_fail("TypeError: sum of non-numbers");
        int64_t n = 0;
        if (total.is_float() || x.is_float())
            total = Value(total.as_float() + x.as_float());
        else if (__builtin_add_overflow(total.as_int(), x.as_int(), &n))
            template_fail("OverflowError: integer too large");
        else
            total = Value(n);
    }
    return total;
}

Value abs_of(const Value& v, CallArgs&, Renderer&) {
    if (!v.is_number()) template_fail("TypeError: bad operand type for abs()");
    if (v.is_float()) return Value(std::fabs(v.as_float()));
    if (v.as_int() == INT64_MIN) template_fail("OverflowError: integer too large");
    return Value(static_cast<int64_t>(std::llabs(v.as_int())));
}

Value round_of(const Value& v, CallArgs& args, Renderer&) {
    const int64_t precision = int_arg(args, 0, "precision", 0, "round");
    if (!v.is_number() || precision < 0 || precision > 15) template_fail("TypeError: round");
    const double scale = std::pow(10.0, static_cast<double>(precision));
    return Value(std::round(v.as_float() * scale) / scale);
}

Value wordcount(const Value& v, CallArgs&, Renderer&) {
    return Value(static_cast<int64_t>(py_split(to_str(v), std::nullopt, -1).size()));
}

Value center(const Value& v, CallArgs& args, Renderer&) {
    const int64_t width = int_arg(args, 0, "width", 80, "center");
    const std::string s = to_str(v);
    const auto n = static_cast<int64_t>(code_point_count(s));
    if (width > 1 << 20) template_fail("center: width too large");
    if (width <= n) return Value(s);
    const int64_t total = width - n, left = total / 2 + (total & width & 1);
    return Value(std::string(static_cast<size_t>(left), ' ') + s +
                 std::string(static_cast<size_t>(total - left), ' '));
}

Value attr(const Value& v, CallArgs& args, Renderer& r) {
    return r.get_attribute(v, to_str(arg(args, 0, "name")));
}

Value tojson_filter(const Value& v, CallArgs& args, Renderer&) {
    return tojson(v, args);
}

Value int_filter(const Value& v, CallArgs& args, Renderer&) {
    return to_int(v, args);
}

Value float_filter(const Value& v, CallArgs& args, Renderer&) {
    return to_float(v, args);
}

using Filter = Value (*)(const Value& subject, CallArgs& args, Renderer& r);

// Every filter by its name (aliases included), as Jinja2's DEFAULT_FILTERS names them.
const std::unordered_map<std::string_view, Filter> kFilters{
    {"tojson", tojson_filter},
    {"length", length_of},
    {"count", length_of},
    {"string", string_of},
    {"safe", safe},
    {"trim", trim},
    {"default", default_value},
    {"d", default_value},
    {"join", join},
    {"items", items},
    {"list", list_of},
    {"lower", lower},
    {"upper", upper},
    {"title", title},
    {"capitalize", capitalize},
    {"escape", escape},
    {"e", escape},
    {"replace", replace},
    {"indent", indent_filter},
    {"dictsort", dictsort_filter},
    {"selectattr", selectattr},
    {"rejectattr", rejectattr},
    {"select", select},
    {"reject", reject},
    {"map", map_items},
    {"first", first},
    {"last", last},
    {"reverse", reverse},
    {"sort", sorted_items},
    {"unique", unique},
    {"min", min_of},
    {"max", max_of},
    {"sum", sum},
    {"int", int_filter},
    {"float", float_filter},
    {"abs", abs_of},
    {"round", round_of},
    {"wordcount", wordcount},
    {"center", center},
    {"attr", attr},
};

}  // namespace

Value apply_filter(const std::string& name, const Value& v, CallArgs& args, Renderer& r) {
    const auto found = kFilters.find(name);
    if (found == kFilters.end())
        template_fail("TemplateAssertionError: no filter named '{}'", name);
    return found->second(v, args, r);
}

}  // namespace kite::tmpl
