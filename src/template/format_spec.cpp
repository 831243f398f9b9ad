#include "template/format_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "template/error.h"
#include "template/py_string.h"

namespace kite::tmpl {

namespace {

// A field wider than this is refused: a template must not allocate without bound.
constexpr int64_t kMaxWidth = 1 << 20;
constexpr int64_t kMaxPrecision = 1000;

struct Spec {
    std::string fill;  // one code point; empty: the default for the type
    char align = 0;    // '<', '>', '^', '=' or 0 (the default for the type)
    char sign = 0;     // '+', '-', ' ' or 0
    bool alternate = false;
    bool zero = false;
    int64_t width = 0;
    char grouping = 0;  // ',' or '_' or 0
    int64_t precision = -1;
    char type = 0;
};

bool is_align(char c) {
    return c == '<' || c == '>' || c == '^' || c == '=';
}

int64_t read_number(std::string_view spec, size_t& at, int64_t limit) {
    int64_t n = 0;
    while (at < spec.size() && spec[at] >= '0' && spec[at] <= '9') {
        n = n * 10 + (spec[at++] - '0');
        if (n > limit) template_fail("ValueError: format width or precision too large");
    }
    return n;
}

Spec parse_spec(std::string_view text) {
    Spec s;
    size_t at = 0;
    const std::vector<std::string_view> cps = code_points(text.substr(0, 8));
    if (cps.size() >= 2 && cps[1].size() == 1 && is_align(cps[1][0])) {
        s.fill = std::string(cps[0]);
        s.align = cps[1][0];
        at = cps[0].size() + 1;
    } else if (!text.empty() && is_align(text[0])) {
        s.align = text[at++];
    }
    if (at < text.size() && (text[at] == '+' || text[at] == '-' || text[at] == ' '))
        s.sign = text[at++];
    if (at < text.size() && text[at] == 'z')
        template_fail("ValueError: the 'z' format option is not supported");
    if (at < text.size() && text[at] == '#') s.alternate = (++at, true);
    if (at < text.size() && text[at] == '0') s.zero = (++at, true);
    s.width = read_number(text, at, kMaxWidth);
    if (at < text.size() && (text[at] == ',' || text[at] == '_')) s.grouping = text[at++];
    if (at < text.size() && text[at] == '.') {
        const size_t digits = ++at;
        s.precision = read_number(text, at, kMaxPrecision);
        if (at == digits) template_fail("ValueError: Format specifier missing precision");
    }
    if (text.size() - at > 1) template_fail("ValueError: Invalid format specifier '{}'", text);
    if (at < text.size()) s.type = text[at];
    return s;
}

// Pads `body` (after `sign_prefix`, which '=' alignment keeps in front of the padding).
std::string pad(const std::string& sign_prefix, const std::string& body, const Spec& s,
                char default_align) {
    const char align = s.align ? s.align : default_align;
    const std::string fill = s.fill.empty() ? " " : s.fill;
    const auto length = static_cast<int64_t>(code_point_count(sign_prefix + body));
    const int64_t missing = std::max<int64_t>(0, s.width - length);
    auto repeat = [&](int64_t n) {
        std::string out;
        for (int64_t i = 0; i < n; ++i) out += fill;
        return out;
    };
    if (align == '<') return sign_prefix + body + repeat(missing);
    if (align == '>') return repeat(missing) + sign_prefix + body;
    if (align == '=') return sign_prefix + repeat(missing) + body;
    return repeat(missing / 2) + sign_prefix + body + repeat(missing - missing / 2);
}

// Inserts `sep` every `every` digits into the first `end` characters of `digits` (the
// integer part).
std::string group_digits(const std::string& digits, size_t end, char sep, size_t every) {
    std::string out;
    for (size_t i = 0; i < end; ++i) {
        if (i > 0 && (end - i) % every == 0) out += sep;
        out += digits[i];
    }
    return out + digits.substr(end);
}

std::string sign_of(bool negative, const Spec& s) {
    if (negative) return "-";
    if (s.sign == '+') return "+";
    if (s.sign == ' ') return " ";
    return "";
}

// Zero padding ('0' before the width) is fill '0' with '=' alignment unless the spec says.
Spec numeric(Spec s) {
    if (s.zero && s.fill.empty()) s.fill.assign(1, '0');
    if (s.zero && !s.align) s.align = '=';
    return s;
}

std::string format_string(const std::string& text, Spec s) {
    if (s.type && s.type != 's')
        template_fail("ValueError: Unknown format code '{}' for object of type 'str'", s.type);
    if (s.sign) template_fail("ValueError: Sign not allowed in string format specifier");
    if (s.alternate)
        template_fail("ValueError: Alternate form (#) not allowed in string format specifier");
    if (s.grouping) template_fail("ValueError: Cannot specify '{}' with 's'.", s.grouping);
    if (s.align == '=')
        template_fail("ValueError: '=' alignment not allowed in string format specifier");
    if (s.zero && s.fill.empty()) s.fill.assign(1, '0');
    std::string body = text;
    if (s.precision >= 0) {
        const auto cps = code_points(text);
        body.clear();
        for (size_t i = 0; i < cps.size() && static_cast<int64_t>(i) < s.precision; ++i)
            body += cps[i];
    }
    return pad("", body, s, '<');
}

// C's printf writes e, f and g as Python does (Python's own float formatting follows it).
std::string printf_float(double f, char type, int64_t precision, bool alternate) {
    const std::string spec = std::string(alternate ? "%#.*" : "%.*") + type;
    const int n = std::snprintf(nullptr, 0, spec.c_str(), static_cast<int>(precision), f);
    std::string out(static_cast<size_t>(n) + 1, '\0');
    std::snprintf(out.data(), out.size(), spec.c_str(), static_cast<int>(precision), f);
    out.resize(static_cast<size_t>(n));
    return out;
}

// The digits of |f| for a float presentation type ('' is repr, or 'g' keeping a '.0').
std::string float_digits(double f, const Spec& s) {
    const bool upper = s.type == 'E' || s.type == 'F' || s.type == 'G';
    if (std::isinf(f)) return upper ? "INF" : "inf";
    if (std::isnan(f)) return upper ? "NAN" : "nan";
    const int64_t p = s.precision < 0 ? 6 : s.precision;
    switch (s.type) {
        case 'e':
        case 'E':
        case 'f':
        case 'F':
            return printf_float(f, s.type, p, s.alternate);
        case 'g':
        case 'G':
        case 'n':
            return printf_float(f, s.type == 'n' ? 'g' : s.type, p == 0 ? 1 : p, s.alternate);
        case '%':
            return printf_float(f * 100, 'f', p, s.alternate) + "%";
        default:
            break;
    }
    if (s.precision < 0) return float_repr(f);
    std::string out = printf_float(f, 'g', p == 0 ? 1 : p, s.alternate);
    if (out.find_first_of(".e") == std::string::npos) out += ".0";
    return out;
}

std::string format_float(double f, const Spec& spec) {
    static constexpr std::string_view kTypes = "eEfFgGn%";
    if (spec.type && kTypes.find(spec.type) == std::string_view::npos)
        template_fail("ValueError: Unknown format code '{}' for object of type 'float'", spec.type);
    if (spec.grouping && spec.type == 'n')
        template_fail("ValueError: Cannot specify '{}' with 'n'.", spec.grouping);
    const Spec s = numeric(spec);
    std::string digits = float_digits(std::fabs(f), s);
    if (s.grouping && std::isfinite(f))
        digits = group_digits(digits, std::min(digits.find_first_of(".eE%"), digits.size()),
                              s.grouping, 3);
    return pad(sign_of(std::signbit(f) && !std::isnan(f), s), digits, s, '>');
}

std::string int_digits(uint64_t magnitude, char type) {
    if (type == 'x') return fmt::format("{:x}", magnitude);
    if (type == 'X') return fmt::format("{:X}", magnitude);
    if (type == 'o') return fmt::format("{:o}", magnitude);
    if (type == 'b') return fmt::format("{:b}", magnitude);
    return std::to_string(magnitude);
}

std::string format_int(int64_t n, const Spec& spec) {
    static constexpr std::string_view kIntTypes = "dnbxXoc";
    if (spec.type && kIntTypes.find(spec.type) == std::string_view::npos) {
        static constexpr std::string_view kFloatTypes = "eEfFgG%";
        if (kFloatTypes.find(spec.type) != std::string_view::npos)
            return format_float(static_cast<double>(n), spec);
        template_fail("ValueError: Unknown format code '{}' for object of type 'int'", spec.type);
    }
    if (spec.precision >= 0)
        template_fail("ValueError: Precision not allowed in integer format specifier");
    const char type = spec.type ? spec.type : 'd';
    if (type == 'c') {
        if (spec.sign)
            template_fail("ValueError: Sign not allowed with integer format specifier 'c'");
        if (n < 0 || n > 0x10FFFF) template_fail("OverflowError: %c arg not in range(0x110000)");
        return pad("", utf8_encode(static_cast<uint32_t>(n)), numeric(spec), '>');
    }
    const bool decimal = type == 'd' || type == 'n';
    if (spec.grouping == ',' && !decimal)
        template_fail("ValueError: Cannot specify ',' with '{}'.", type);
    const Spec s = numeric(spec);
    const uint64_t magnitude = n < 0 ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
    std::string digits = int_digits(magnitude, type);
    if (s.grouping) digits = group_digits(digits, digits.size(), s.grouping, decimal ? 3 : 4);
    std::string prefix = sign_of(n < 0, s);
    if (s.alternate && !decimal) prefix += std::string("0") + type;
    return pad(prefix, digits, s, '>');
}

}  // namespace

std::string format_value(const Value& v, std::string_view text) {
    // object.__format__: str(v) for an empty spec, an error for any other.
    if (text.empty()) return to_str(v);
    const Spec spec = parse_spec(text);
    if (v.is_string()) return format_string(v.str(), spec);
    if (v.is_int() || v.is_bool()) return format_int(v.as_int(), spec);
    if (v.is_float()) return format_float(v.as_float(), spec);
    template_fail("TypeError: unsupported format string passed to {}.__format__", v.type_name());
}

}  // namespace kite::tmpl
