// Python's str methods, as jinja2's sandbox lets templates call them. Strings index by code
// point; case mappings and character classes are ASCII's (other code points keep their case).
#include <algorithm>
#include <optional>

#include "template/error.h"
#include "template/method_table.h"
#include "template/py_string.h"
#include "template/renderer.h"
#include "template/str_format.h"

namespace kite::tmpl {

namespace {

// A width or count: Python takes an int (or bool) there and names anything else.
int64_t int_param(const CallArgs& a, size_t i, std::string_view name,
                  std::optional<int64_t> fallback) {
    const Value v = arg(a, i, name);
    if (v.is_undefined() && fallback) return *fallback;
    if (!v.is_int() && !v.is_bool())
        template_fail("TypeError: '{}' object cannot be interpreted as an integer", v.type_name());
    return v.as_int();
}

int64_t width_param(const CallArgs& a, size_t i, std::string_view name) {
    const int64_t width = int_param(a, i, name, std::nullopt);
    if (width > (int64_t{1} << 24)) template_fail("MemoryError: width {} is too large", width);
    return width;
}

std::optional<std::string> optional_string(const CallArgs& a, size_t i, std::string_view name) {
    const Value v = arg(a, i, name);
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_string())
        template_fail("TypeError: {} arg must be None or str, not {}", name, v.type_name());
    return v.str();
}

std::string string_param(const CallArgs& a, size_t i, std::string_view name) {
    const Value v = arg(a, i, name);
    if (v.is_undefined()) template_fail("TypeError: missing required argument '{}'", name);
    if (!v.is_string()) template_fail("TypeError: must be str, not {}", v.type_name());
    return v.str();
}

Value strings(std::vector<std::string> parts) {
    List out;
    out.reserve(parts.size());
    for (std::string& p : parts) out.emplace_back(std::move(p));
    return Value(std::move(out));
}

// s[start:end] for find/count/startswith, with Python's index rules (negative from the end,
// clamped). `start` and `end` are code point positions; `text` the bytes between them.
struct Window {
    std::string_view text;
    int64_t start = 0, end = 0;
};

Window window(const std::string& s, const CallArgs& a, size_t first) {
    const auto cps = code_points(s);
    const auto len = static_cast<int64_t>(cps.size());
    auto bound = [&](size_t i, const char* name, int64_t fallback) {
        const Value v = arg(a, i, name);
        if (v.is_undefined() || v.is_none()) return fallback;
        int64_t x = int_param(a, i, name, fallback);
        if (x < 0) x = std::max<int64_t>(0, x + len);
        return x;
    };
    Window w;
    w.start = bound(first, "start", 0);
    w.end = std::min(bound(first + 1, "end", len), len);
    if (w.start < w.end) {
        const auto from = static_cast<size_t>(cps[static_cast<size_t>(w.start)].data() - s.data());
        const auto to =
            w.end == len ? s.size()
                         : static_cast<size_t>(cps[static_cast<size_t>(w.end)].data() - s.data());
        w.text = std::string_view(s).substr(from, to - from);
    }
    return w;
}

int64_t find_in(const std::string& s, CallArgs& a, bool reverse) {
    const std::string sub = string_param(a, 0, "sub");
    const Window w = window(s, a, 1);
    if (w.end - w.start < static_cast<int64_t>(code_point_count(sub))) return -1;
    const size_t at = reverse ? w.text.rfind(sub) : w.text.find(sub);
    if (at == std::string_view::npos) return -1;
    return w.start + static_cast<int64_t>(code_point_count(w.text.substr(0, at)));
}

Value find(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 1, 3, "find");
    return Value(find_in(self.str(), a, false));
}

Value rfind(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 1, 3, "rfind");
    return Value(find_in(self.str(), a, true));
}

Value index(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 1, 3, "index");
    const int64_t at = find_in(self.str(), a, false);
    if (at < 0) template_fail("ValueError: substring not found");
    return Value(at);
}

Value rindex(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 1, 3, "rindex");
    const int64_t at = find_in(self.str(), a, true);
    if (at < 0) template_fail("ValueError: substring not found");
    return Value(at);
}

Value count(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 1, 3, "count");
    const std::string sub = string_param(a, 0, "sub");
    const Window w = window(self.str(), a, 1);
    if (w.end < w.start) return Value(int64_t{0});
    if (sub.empty()) return Value(w.end - w.start + 1);
    int64_t n = 0;
    for (size_t at = w.text.find(sub); at != std::string_view::npos;
         at = w.text.find(sub, at + sub.size()))
        ++n;
    return Value(n);
}

// startswith/endswith take a string or a tuple of strings, and a start and end.
bool affix_matches(const Value& affix, const Window& w, bool prefix, const char* name) {
    if (affix.is_list()) {
        for (const Value& item : affix.list())
            if (affix_matches(item, w, prefix, name)) return true;
        return false;
    }
    if (!affix.is_string())
        template_fail("TypeError: {} first arg must be str or a tuple of str, not {}", name,
                      affix.type_name());
    if (w.end - w.start < static_cast<int64_t>(code_point_count(affix.str()))) return false;
    return prefix ? w.text.starts_with(affix.str()) : w.text.ends_with(affix.str());
}

Value startswith(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 1, 3, "startswith");
    return Value(affix_matches(arg(a, 0, "prefix"), window(self.str(), a, 1), true, "startswith"));
}

Value endswith(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 1, 3, "endswith");
    return Value(affix_matches(arg(a, 0, "suffix"), window(self.str(), a, 1), false, "endswith"));
}

Value strip(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 0, 1, "strip");
    return Value(py_strip(self.str(), optional_string(a, 0, "chars"), true, true));
}

Value lstrip(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 0, 1, "lstrip");
    return Value(py_strip(self.str(), optional_string(a, 0, "chars"), true, false));
}

Value rstrip(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 0, 1, "rstrip");
    return Value(py_strip(self.str(), optional_string(a, 0, "chars"), false, true));
}

Value split(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 0, 2, "split");
    return strings(
        py_split(self.str(), optional_string(a, 0, "sep"), int_param(a, 1, "maxsplit", -1)));
}

Value rsplit(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 0, 2, "rsplit");
    return strings(
        py_rsplit(self.str(), optional_string(a, 0, "sep"), int_param(a, 1, "maxsplit", -1)));
}

// The line boundaries of str.splitlines (\r\n counts as one).
size_t line_break_length(std::string_view s, size_t at) {
    static constexpr std::string_view kBreaks[] = {
        "\r\n", "\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\u0085", "\u2028", "\u2029"};
    for (std::string_view b : kBreaks)
        if (s.substr(at).starts_with(b)) return b.size();
    return 0;
}

Value splitlines(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 0, 1, "splitlines");
    const bool keepends = arg(a, 0, "keepends", Value(false)).truthy();
    const std::string& s = self.str();
    List lines;
    size_t begin = 0;
    for (size_t at = 0; at < s.size();) {
        const size_t n = line_break_length(s, at);
        if (n == 0) {
            ++at;
            continue;
        }
        lines.emplace_back(s.substr(begin, at - begin + (keepends ? n : 0)));
        at += n;
        begin = at;
    }
    if (begin < s.size()) lines.emplace_back(s.substr(begin));
    return Value(std::move(lines));
}

Value join(const Value& self, CallArgs& a, Renderer& r) {
    expect_args(a, 1, 1, "join");
    std::string out;
    size_t i = 0;
    for (const Value& item : iterate(arg(a, 0, "iterable"))) {
        if (!item.is_string())
            template_fail("TypeError: sequence item {}: expected str instance, {} found", i,
                          item.type_name());
        if (i++ > 0) out += self.str();
        out += item.str();
        r.check_size(out.size());
    }
    return Value(std::move(out));
}

Value replace(const Value& self, CallArgs& a, Renderer& r) {
    expect_args(a, 2, 3, "replace");
    std::string out = py_replace(self.str(), string_param(a, 0, "old"), string_param(a, 1, "new"),
                                 int_param(a, 2, "count", -1));
    r.check_size(out.size());
    return Value(std::move(out));
}

std::string fill_param(const CallArgs& a, size_t i) {
    const Value v = arg(a, i, "fillchar", Value(" "));
    if (!v.is_string() || code_point_count(v.str()) != 1)
        template_fail("TypeError: The fill character must be exactly one character long");
    return v.str();
}

std::string repeat(const std::string& unit, int64_t n) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += unit;
    return out;
}

int64_t missing_width(const std::string& s, int64_t width) {
    return std::max<int64_t>(0, width - static_cast<int64_t>(code_point_count(s)));
}

Value center(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 1, 2, "center");
    const int64_t width = width_param(a, 0, "width");
    const std::string fill = fill_param(a, 1);
    const int64_t total = missing_width(self.str(), width);
    const int64_t left = total / 2 + (total & width & 1);  // CPython's pad() rounding
    return Value(repeat(fill, left) + self.str() + repeat(fill, total - left));
}

Value ljust(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 1, 2, "ljust");
    const int64_t width = width_param(a, 0, "width");
    return Value(self.str() + repeat(fill_param(a, 1), missing_width(self.str(), width)));
}

Value rjust(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 1, 2, "rjust");
    const int64_t width = width_param(a, 0, "width");
    return Value(repeat(fill_param(a, 1), missing_width(self.str(), width)) + self.str());
}

Value zfill(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 1, 1, "zfill");
    const std::string& s = self.str();
    const std::string zeros(static_cast<size_t>(missing_width(s, width_param(a, 0, "width"))), '0');
    if (!s.empty() && (s[0] == '+' || s[0] == '-'))
        return Value(s.substr(0, 1) + zeros + s.substr(1));
    return Value(zeros + s);
}

Value expandtabs(const Value& self, CallArgs& a, Renderer& r) {
    expect_args(a, 0, 1, "expandtabs");
    const int64_t tabsize = std::min<int64_t>(int_param(a, 0, "tabsize", 8), 1 << 16);
    std::string out;
    int64_t column = 0;
    for (std::string_view cp : code_points(self.str())) {
        if (cp == "\t") {
            const int64_t spaces = tabsize > 0 ? tabsize - column % tabsize : 0;
            out.append(static_cast<size_t>(spaces), ' ');
            column += spaces;
        } else {
            out += cp;
            column = cp == "\n" || cp == "\r" ? 0 : column + 1;
        }
        r.check_size(out.size());
    }
    return Value(std::move(out));
}

Value partition_at(const Value& self, CallArgs& a, bool reverse) {
    expect_args(a, 1, 1, reverse ? "rpartition" : "partition");
    const std::string sep = string_param(a, 0, "sep");
    if (sep.empty()) template_fail("ValueError: empty separator");
    const std::string& s = self.str();
    const size_t at = reverse ? s.rfind(sep) : s.find(sep);
    if (at == std::string::npos)
        return reverse ? Value::tuple({Value(""), Value(""), Value(s)})
                       : Value::tuple({Value(s), Value(""), Value("")});
    return Value::tuple({Value(s.substr(0, at)), Value(sep), Value(s.substr(at + sep.size()))});
}

Value partition(const Value& self, CallArgs& a, Renderer&) {
    return partition_at(self, a, false);
}

Value rpartition(const Value& self, CallArgs& a, Renderer&) {
    return partition_at(self, a, true);
}

Value removeprefix(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 1, 1, "removeprefix");
    const std::string prefix = string_param(a, 0, "prefix");
    const std::string& s = self.str();
    return Value(s.starts_with(prefix) ? s.substr(prefix.size()) : s);
}

Value removesuffix(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 1, 1, "removesuffix");
    const std::string suffix = string_param(a, 0, "suffix");
    const std::string& s = self.str();
    return Value(s.ends_with(suffix) ? s.substr(0, s.size() - suffix.size()) : s);
}

// translate(table): each code point's number looked up in a dict of str, number or None.
Value translate(const Value& self, CallArgs& a, Renderer& r) {
    expect_args(a, 1, 1, "translate");
    const Value table = arg(a, 0, "table");
    if (!table.is_dict())
        template_fail("TypeError: translate() needs a dict, not {}", table.type_name());
    std::string out;
    for (std::string_view cp : code_points(self.str())) {
        const Value* to = table.dict().find_key(Value(static_cast<int64_t>(code_point_value(cp))));
        if (!to) {
            out += cp;
        } else if (to->is_string()) {
            out += to->str();
        } else if (to->is_int()) {
            if (to->as_int() < 0 || to->as_int() > 0x10FFFF)
                template_fail("ValueError: character mapping must be in range(0x110000)");
            out += utf8_encode(static_cast<uint32_t>(to->as_int()));
        } else if (!to->is_none()) {
            template_fail("TypeError: character mapping must return integer, None or str");
        }
        r.check_size(out.size());
    }
    return Value(std::move(out));
}

Value format(const Value& self, CallArgs& a, Renderer& r) {
    return Value(str_format(self.str(), a, nullptr, r));
}

Value format_map(const Value& self, CallArgs& a, Renderer& r) {
    expect_args(a, 1, 1, "format_map");
    const Value mapping = arg(a, 0, "mapping");
    if (!mapping.is_dict()) template_fail("TypeError: format_map() needs a mapping");
    return Value(str_format(self.str(), CallArgs{}, &mapping, r));
}

// --- case mappings and character classes ---

using Mapping = std::string (*)(std::string_view);

template <Mapping map>
Value mapped(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 0, 0, "str method");
    return Value(map(self.str()));
}

bool is_digit_ascii(char c) {
    return c >= '0' && c <= '9';
}

// A code point class: ASCII by table; `other` for every non-ASCII code point.
using CharClass = bool (*)(std::string_view cp);

bool alpha(std::string_view cp) {
    if (cp.size() > 1) return !is_py_space(cp);
    return (cp[0] >= 'a' && cp[0] <= 'z') || (cp[0] >= 'A' && cp[0] <= 'Z');
}
bool digit(std::string_view cp) {
    return cp.size() == 1 && is_digit_ascii(cp[0]);
}
bool alnum(std::string_view cp) {
    return alpha(cp) || digit(cp);
}
bool space(std::string_view cp) {
    return is_py_space(cp);
}
bool ascii(std::string_view cp) {
    return cp.size() == 1 && static_cast<unsigned char>(cp[0]) < 0x80;
}
bool printable(std::string_view cp) {
    if (cp.size() == 1) return cp[0] >= 0x20 && cp[0] < 0x7f;
    const uint32_t v = code_point_value(cp);
    return v > 0x9f && !is_py_space(cp) && v != 0xad;
}

// all(cls(c) for c in s), and for most classes s must not be empty.
template <CharClass cls, bool empty_result>
Value all_of(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 0, 0, "str method");
    const auto cps = code_points(self.str());
    if (cps.empty()) return Value(empty_result);
    return Value(std::all_of(cps.begin(), cps.end(), cls));
}

Value isidentifier(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 0, 0, "isidentifier");
    const auto cps = code_points(self.str());
    if (cps.empty() || digit(cps[0])) return Value(false);
    return Value(std::all_of(cps.begin(), cps.end(),
                             [](std::string_view cp) { return alnum(cp) || cp == "_"; }));
}

// islower/isupper: some cased character, and none of the other case.
template <bool upper>
Value cased(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 0, 0, upper ? "isupper" : "islower");
    bool wanted = false;
    for (std::string_view cp : code_points(self.str())) {
        const uint32_t v = code_point_value(cp);
        if (upper ? is_lower_letter(v) : is_upper_letter(v)) return Value(false);
        wanted = wanted || (upper ? is_upper_letter(v) : is_lower_letter(v));
    }
    return Value(wanted);
}

// istitle: uppercase letters only after uncased ones, lowercase only after cased ones.
Value istitle(const Value& self, CallArgs& a, Renderer&) {
    expect_args(a, 0, 0, "istitle");
    bool previous_cased = false, any_cased = false;
    for (std::string_view cp : code_points(self.str())) {
        const uint32_t v = code_point_value(cp);
        const bool upper = is_upper_letter(v), lower = is_lower_letter(v);
        if ((upper && previous_cased) || (lower && !previous_cased)) return Value(false);
        previous_cased = upper || lower;
        any_cased = any_cased || upper;
    }
    return Value(any_cased);
}

const MethodTable kStrMethods{
    {"capitalize", mapped<py_capitalize>},
    {"casefold", mapped<py_lower>},
    {"center", center},
    {"count", count},
    {"endswith", endswith},
    {"expandtabs", expandtabs},
    {"find", find},
    {"format", format},
    {"format_map", format_map},
    {"index", index},
    {"isalnum", all_of<alnum, false>},
    {"isalpha", all_of<alpha, false>},
    {"isascii", all_of<ascii, true>},
    {"isdecimal", all_of<digit, false>},
    {"isdigit", all_of<digit, false>},
    {"isidentifier", isidentifier},
    {"islower", cased<false>},
    {"isnumeric", all_of<digit, false>},
    {"isprintable", all_of<printable, true>},
    {"isspace", all_of<space, false>},
    {"istitle", istitle},
    {"isupper", cased<true>},
    {"join", join},
    {"ljust", ljust},
    {"lower", mapped<py_lower>},
    {"lstrip", lstrip},
    {"partition", partition},
    {"removeprefix", removeprefix},
    {"removesuffix", removesuffix},
    {"replace", replace},
    {"rfind", rfind},
    {"rindex", rindex},
    {"rjust", rjust},
    {"rpartition", rpartition},
    {"rsplit", rsplit},
    {"rstrip", rstrip},
    {"split", split},
    {"splitlines", splitlines},
    {"startswith", startswith},
    {"strip", strip},
    {"swapcase", mapped<py_swapcase>},
    {"title", mapped<py_title>},
    {"translate", translate},
    {"upper", mapped<py_upper>},
    {"zfill", zfill},
};

}  // namespace

const MethodTable& str_methods() {
    return kStrMethods;
}

}  // namespace kite::tmpl
