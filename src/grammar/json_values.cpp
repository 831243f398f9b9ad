#include "grammar/json_values.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "grammar/regex.h"

namespace kite::grammar {

namespace {

// Numbers are bounded: at most 20 digits before the point (every int64 and uint64), 20 after it
// and 3 in the exponent (every double's), so a model that repeats a digit (greedy decoding does)
// reaches the number's end instead of max_tokens. No double needs more; such a number in a
// valid instance is refused, which keeps the promise (never output outside the schema).
constexpr uint32_t kMaxIntegerDigits = 20;
constexpr uint32_t kMaxFractionDigits = 20;
constexpr uint32_t kMaxExponentDigits = 3;

Expr digit() {
    return char_class({{'0', '9'}});
}
Expr digits(uint32_t max) {
    return repeat(digit(), 0, max);
}

struct ShortEscape {
    uint32_t cp;
    const char* text;
};
const ShortEscape kShortEscapes[] = {{'"', "\\\""}, {'\\', "\\\\"}, {'\b', "\\b"}, {'\f', "\\f"},
                                     {'\n', "\\n"}, {'\r', "\\r"},  {'\t', "\\t"}};

std::string escape_of(uint32_t cp) {
    for (const ShortEscape& e : kShortEscapes)
        if (e.cp == cp) return e.text;
    return fmt::format("\\u{:04x}", cp);
}

bool needs_escape(uint32_t cp) {
    return cp < 0x20 || cp == '"' || cp == '\\';
}

// A class's characters, JSON-escaped: the plain ones as UTF-8, the others as escapes.
Expr encode_class(const std::vector<CodeRange>& ranges) {
    std::vector<Expr> parts;
    for (const CodeRange& r : ranges)
        for (uint32_t cp = r.lo; cp <= std::min<uint32_t>(r.hi, 0x5C); ++cp)
            if (needs_escape(cp)) parts.push_back(lit(escape_of(cp)));
    // plain = ranges minus the escaped: the complement of (complement(ranges) + escaped).
    std::vector<CodeRange> outside = normalize_ranges(ranges, true);
    outside.insert(outside.end(), {{0, 0x1F}, {0x22, 0x22}, {0x5C, 0x5C}});
    const std::vector<CodeRange> plain = normalize_ranges(outside, true);
    if (!plain.empty()) parts.push_back(char_class(plain));
    if (parts.size() == 1) return std::move(parts[0]);
    return alt(std::move(parts));
}

std::string pow10_minus_one(size_t n) {
    return std::string(n, '9');
}

// Decimal strings lo..hi of the same length (leading zeros allowed inside the recursion).
Expr same_length_range(const std::string& lo, const std::string& hi) {
    if (lo.empty()) return empty();
    const uint32_t a = static_cast<uint32_t>(lo[0]), z = static_cast<uint32_t>(hi[0]);
    if (lo.size() == 1) return char_class({{a, z}});
    // Every string of this length: without this the two recursions below double at every
    // digit (2^16 branches for a bound near 9e15, seconds to compile).
    if (lo.find_first_not_of('0') == std::string::npos &&
        hi.find_first_not_of('9') == std::string::npos)
        return repeat(digit(), static_cast<uint32_t>(lo.size()), static_cast<uint32_t>(lo.size()));
    const std::string lo_rest = lo.substr(1), hi_rest = hi.substr(1);
    if (a == z) return seq({lit(std::string(1, lo[0])), same_length_range(lo_rest, hi_rest)});
    const std::string nines(lo_rest.size(), '9'), zeros(lo_rest.size(), '0');
    std::vector<Expr> parts;
    parts.push_back(seq({lit(std::string(1, lo[0])), same_length_range(lo_rest, nines)}));
    if (z > a + 1)
        parts.push_back(seq(
            {char_class({{a + 1, z - 1}}), repeat(digit(), static_cast<uint32_t>(lo_rest.size()),
                                                  static_cast<uint32_t>(lo_rest.size()))}));
    parts.push_back(seq({lit(std::string(1, hi[0])), same_length_range(zeros, hi_rest)}));
    return alt(std::move(parts));
}

// Non-negative integers in [lo, hi] (hi absent: unbounded), without leading zeros.
Expr natural_range(uint64_t lo, std::optional<uint64_t> hi) {
    const std::string a = std::to_string(lo);
    std::vector<Expr> parts;
    const size_t max_len = hi ? std::to_string(*hi).size() : a.size();
    for (size_t len = a.size(); len <= max_len; ++len) {
        std::string from = a;
        if (len != a.size()) {  // 10^(len-1); built in place (GCC 12 misreads "1" + string)
            from.assign(len, '0');
            from[0] = '1';
        }
        const std::string to = hi && len == max_len ? std::to_string(*hi) : pow10_minus_one(len);
        if (from.size() == to.size() && from <= to) parts.push_back(same_length_range(from, to));
    }
    if (!hi)
        parts.push_back(seq(
            {char_class({{'1', '9'}}),
             repeat(digit(), static_cast<uint32_t>(a.size()),
                    std::max<uint32_t>(static_cast<uint32_t>(a.size()), kMaxIntegerDigits - 1))}));
    return alt(std::move(parts));
}

Expr any_fraction() {
    return opt(seq({lit("."), repeat(digit(), 1, kMaxFractionDigits)}));
}
Expr zero_fraction() {
    return opt(seq({lit("."), repeat(lit("0"), 1, kMaxFractionDigits)}));
}
// A fraction of at most kMaxFractionDigits digits, not all zeros: k zeros, then the first
// nonzero digit, then any digits up to the bound.
Expr nonzero_fraction() {
    std::vector<Expr> parts;
    for (uint32_t zeros = 0; zeros < kMaxFractionDigits; ++zeros)
        parts.push_back(seq({repeat(lit("0"), zeros, zeros), char_class({{'1', '9'}}),
                             digits(kMaxFractionDigits - 1 - zeros)}));
    return seq({lit("."), alt(std::move(parts))});
}

struct Format {
    const char* name;
    const char* regex;
};
// Conservative grammars: each accepts only strings the Python format checkers accept (days
// up to 28 in February, since leap years are beyond a grammar this size).
#define KITE_DATE                                                                        \
    "[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|" \
    "[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))"
#define KITE_TIME "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,6})?"
#define KITE_OFFSET "(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
const Format kFormats[] = {
    {"date", KITE_DATE},
    {"time", KITE_TIME KITE_OFFSET},
    {"date-time", KITE_DATE "T" KITE_TIME KITE_OFFSET},
    {"uuid", "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"},
    {"ipv4",
     "(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}"
     "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"},
    {"email", "[A-Za-z0-9._+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+"},
    // scheme://host[:port][/path][?query][#fragment], each part from RFC 3986's characters.
    {"uri",
     "[a-z][a-z0-9+.-]*://[A-Za-z0-9._~-]+(?::[0-9]+)?(?:/[A-Za-z0-9._~-]*)*"
     "(?:\\?[A-Za-z0-9._~=&-]*)?(?:#[A-Za-z0-9._~-]*)?"},
};

}  // namespace

std::string json_quote(const std::string& text) {
    std::string out = "\"";
    // nlohmann escapes exactly as json.dumps(ensure_ascii=False) does for well-formed text.
    const std::string dumped = nlohmann::json(text).dump();
    out += dumped.substr(1, dumped.size() - 2);
    return out + "\"";
}

Expr json_encode_chars(const Expr& e) {
    Expr out = e;
    if (e.kind == Expr::Kind::Class) return encode_class(e.ranges);
    if (e.kind == Expr::Kind::Literal)
        throw GrammarError("a literal where characters were expected");
    for (Expr& item : out.items) item = json_encode_chars(item);
    return out;
}

void define_json_rules(GrammarBuilder& b) {
    b.define("json_char", json_encode_chars(char_class({{0, kMaxCodePoint}})));
    b.define("json_string", seq({lit("\""), star(ref("json_char")), lit("\"")}));
    b.define(
        "json_integer",
        seq({opt(lit("-")),
             alt({lit("0"), seq({char_class({{'1', '9'}}), digits(kMaxIntegerDigits - 1)})})}));
    b.define("json_number", seq({ref("json_integer"), any_fraction(),
                                 opt(seq({char_class({{'e', 'e'}, {'E', 'E'}}),
                                          opt(char_class({{'+', '+'}, {'-', '-'}})),
                                          repeat(digit(), 1, kMaxExponentDigits)}))}));
    b.define("json_member", seq({ref("json_string"), lit(":"), ref("json_value")}));
    b.define(
        "json_object",
        seq({lit("{"), opt(seq({ref("json_member"), star(seq({lit(","), ref("json_member")}))})),
             lit("}")}));
    b.define("json_array",
             seq({lit("["), opt(seq({ref("json_value"), star(seq({lit(","), ref("json_value")}))})),
                  lit("]")}));
    b.define("json_value", alt({ref("json_object"), ref("json_array"), ref("json_string"),
                                ref("json_number"), lit("true"), lit("false"), lit("null")}));
}

Expr integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    if (lo && hi && *lo > *hi) return alt({});
    std::vector<Expr> parts;
    // Non-negative part: [max(lo, 0), hi].
    if (!hi || *hi >= 0) {
        const uint64_t from = lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0;
        std::optional<uint64_t> to;
        if (hi) to = static_cast<uint64_t>(*hi);
        parts.push_back(natural_range(from, to));
    }
    // Negative part: -x for x in [max(1, -hi), -lo].
    if (!lo || *lo < 0) {
        const uint64_t from = hi && *hi < 0 ? 0 - static_cast<uint64_t>(*hi) : 1;
        std::optional<uint64_t> to;
        if (lo) to = 0 - static_cast<uint64_t>(*lo);
        parts.push_back(seq({lit("-"), natural_range(from, to)}));
    }
    return alt(std::move(parts));
}

Expr number_range(int64_t lo, bool lo_exclusive, std::optional<int64_t> hi, bool hi_exclusive) {
    if (lo < 0) throw GrammarError("a number range below zero");
    std::vector<Expr> parts;
    const int64_t first = lo_exclusive ? lo + 1 : lo;
    // Integer parts with any fraction: [first, hi - 1].
    if (!hi || *hi - 1 >= first) {
        std::optional<int64_t> last;
        if (hi) last = *hi - 1;
        parts.push_back(seq({integer_range(first, last), any_fraction()}));
    }
    if (hi && !hi_exclusive && *hi >= first)
        parts.push_back(seq({lit(std::to_string(*hi)), zero_fraction()}));
    if (lo_exclusive && (!hi || *hi > lo))
        parts.push_back(seq({lit(std::to_string(lo)), nonzero_fraction()}));
    return alt(std::move(parts));
}

Expr string_format(const std::string& format) {
    for (const Format& f : kFormats)
        if (format == f.name) return json_encode_chars(regex_to_expr(f.regex, RegexMatch::Full));
    throw GrammarError(fmt::format("unsupported format '{}'", format));
}

}  // namespace kite::grammar
