#include "grammar/regex.h"

#include <fmt/format.h>

#include "core/utf8.h"
#include "grammar/grammar.h"

namespace kite::grammar {

namespace {

// Python's whitespace (str.isspace), which \s matches; \S is its exact complement.
const std::vector<CodeRange> kSpace = {
    {0x09, 0x0D},     {0x1C, 0x20},     {0x85, 0x85},     {0xA0, 0xA0},     {0x1680, 0x1680},
    {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}};
const std::vector<CodeRange> kDigit = {{'0', '9'}};
// Every character either engine may call a digit: no other script's digits come before U+0660.
const std::vector<CodeRange> kDigitWide = {{'0', '9'}, {0x660, kMaxCodePoint}};
const std::vector<CodeRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const std::vector<CodeRange> kWordWide = {
    {'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}, {0x80, kMaxCodePoint}};

// A class escape's characters: `inner` when used as is, `outer` a superset (for negation).
struct ClassEscape {
    char letter;
    const std::vector<CodeRange>* inner;
    const std::vector<CodeRange>* outer;
    bool negated;
};
const ClassEscape kClassEscapes[] = {
    {'d', &kDigit, &kDigitWide, false}, {'D', &kDigitWide, &kDigit, true},
    {'w', &kWord, &kWordWide, false},   {'W', &kWordWide, &kWord, true},
    {'s', &kSpace, &kSpace, false},     {'S', &kSpace, &kSpace, true},
};

struct CharEscape {
    char letter;
    uint32_t cp;
};
const CharEscape kCharEscapes[] = {{'t', '\t'}, {'n', '\n'}, {'r', '\r'},
                                   {'f', '\f'}, {'v', '\v'}, {'0', 0}};

std::vector<CodeRange> concat(std::vector<CodeRange> a, const std::vector<CodeRange>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

class RegexParser {
  public:
    explicit RegexParser(std::string_view p) : p_(p) {}

    Expr parse(RegexMatch match) {
        std::vector<Expr> alternatives;
        do {
            alternatives.push_back(top_alternative(match));
        } while (eat('|'));
        if (pos_ < p_.size()) error("unbalanced ')'");
        return alt(std::move(alternatives));
    }

  private:
    [[noreturn]] void error(std::string_view what) const {
        throw GrammarError(fmt::format("regex '{}': {} at offset {}", p_, what, pos_));
    }
    bool at_end() const { return pos_ >= p_.size(); }
    char peek() const { return at_end() ? '\0' : p_[pos_]; }
    bool eat(char c) {
        if (at_end() || p_[pos_] != c) return false;
        ++pos_;
        return true;
    }

    // One top-level alternative with its anchors: Search mode lets any text stand before an
    // unanchored start and after an unanchored end.
    Expr top_alternative(RegexMatch match) {
        const bool start = eat('^');
        Expr body = sequence();
        const bool end = eat('$');
        if (!at_end() && peek() != '|') error("'$' before the end");
        if (match == RegexMatch::Full) return body;
        const Expr any = star(char_class({{0, kMaxCodePoint}}));
        std::vector<Expr> parts;
        if (!start) parts.push_back(any);
        parts.push_back(std::move(body));
        if (!end) parts.push_back(any);
        return seq(std::move(parts));
    }

    Expr alternation() {
        std::vector<Expr> alternatives;
        do {
            alternatives.push_back(sequence());
        } while (eat('|'));
        return alt(std::move(alternatives));
    }

    Expr sequence() {
        std::vector<Expr> items;
        while (!at_end() && peek() != '|' && peek() != ')' && peek() != '$') {
            if (peek() == '^') error("'^' after the start");
            Expr atom_expr = atom();
            items.push_back(quantified(std::move(atom_expr)));
        }
        if (items.empty()) return empty();
        return seq(std::move(items));
    }

    bool read_number(uint32_t& out) {
        const size_t start = pos_;
        uint64_t v = 0;
        while (!at_end() && peek() >= '0' && peek() <= '9') {
            v = v * 10 + static_cast<uint64_t>(p_[pos_++] - '0');
            if (v > 100000) error("a repetition count is too large");
        }
        out = static_cast<uint32_t>(v);
        return pos_ > start;
    }

    // {n}, {n,}, {n,m}; a '{' that does not start one is a literal (as in Python).
    bool counted(uint32_t& min, uint32_t& max) {
        const size_t start = pos_;
        if (!eat('{')) return false;
        if (peek() == ',') error("'{,n}' (Python reads it as {0,n}, ECMAScript as text)");
        if (read_number(min)) {
            max = min;
            if (eat(',')) {
                if (!read_number(max)) max = kUnbounded;
            }
            if (eat('}')) return true;
        }
        pos_ = start;
        return false;
    }

    Expr quantified(Expr item) {
        for (;;) {
            uint32_t min = 0, max = 0;
            if (eat('*')) {
                max = kUnbounded;
            } else if (eat('+')) {
                min = 1;
                max = kUnbounded;
            } else if (eat('?')) {
                max = 1;
            } else if (!counted(min, max)) {
                return item;
            }
            if (max != kUnbounded && min > max) error("a repetition has min above max");
            eat('?');  // lazy: the same language
            if (peek() == '+') error("possessive quantifiers are not supported");
            item = repeat(std::move(item), min, max);
        }
    }

    uint32_t next_code_point() {
        const Utf8Sequence s = next_utf8_sequence(p_.substr(pos_));
        if (s.status != Utf8Status::Complete) error("invalid UTF-8");
        const uint32_t cp = decode_utf8(p_.substr(pos_, s.length));
        pos_ += s.length;
        return cp;
    }

    Expr atom() {
        const char c = peek();
        if (c == '(') return group();
        if (c == '[') return bracket();
        if (c == '.') {
            ++pos_;
            return char_class({{'\n', '\n'}}, true);
        }
        if (c == '\\') return escape_atom();
        if (c == '*' || c == '+' || c == '?') error("a quantifier with nothing to repeat");
        const uint32_t cp = next_code_point();
        return char_class({{cp, cp}});
    }

    Expr group() {
        ++pos_;
        if (++depth_ > kMaxDepth) error("groups nest too deeply");
        if (eat('?')) {
            if (eat(':')) {
            } else if (eat('P') || (peek() == '<' && pos_ + 1 < p_.size() && p_[pos_ + 1] != '=' &&
                                    p_[pos_ + 1] != '!')) {
                if (!eat('<')) error("unsupported group");
                while (!at_end() && peek() != '>') ++pos_;
                if (!eat('>')) error("unterminated group name");
            } else {
                error("lookaround and inline flags are not supported");
            }
        }
        Expr inner = alternation();
        if (!eat(')')) error("missing ')'");
        --depth_;
        return inner;
    }

    uint32_t hex_digits(int n) {
        uint32_t v = 0;
        for (int i = 0; i < n; ++i) {
            const char h = peek();
            int d = -1;
            if (h >= '0' && h <= '9')
                d = h - '0';
            else if (h >= 'a' && h <= 'f')
                d = h - 'a' + 10;
            else if (h >= 'A' && h <= 'F')
                d = h - 'A' + 10;
            if (d < 0) error("a bad hex escape");
            v = v * 16 + static_cast<uint32_t>(d);
            ++pos_;
        }
        return v;
    }

    // An escape after the backslash: a class escape fills `ranges` (returns true), a
    // character escape sets `cp`.
    bool escape(bool in_class, bool negated_class, std::vector<CodeRange>& ranges, uint32_t& cp) {
        if (at_end()) error("a trailing backslash");
        const char c = p_[pos_];
        for (const ClassEscape& e : kClassEscapes) {
            if (e.letter != c) continue;
            ++pos_;
            // Inside a negated class the complement is taken later: use the wider set.
            const auto& set = negated_class ? *e.outer : *e.inner;
            ranges = normalize_ranges(set, e.negated);
            return true;
        }
        for (const CharEscape& e : kCharEscapes) {
            if (e.letter != c) continue;
            ++pos_;
            cp = e.cp;
            return false;
        }
        if (c == 'x') {
            ++pos_;
            cp = hex_digits(2);
            return false;
        }
        if (c == 'u') {
            ++pos_;
            cp = hex_digits(4);
            return false;
        }
        if (c == 'b' && in_class) {
            ++pos_;
            cp = '\b';
            return false;
        }
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
            error(fmt::format("unsupported escape '\\{}'", c));
        cp = next_code_point();
        return false;
    }

    Expr escape_atom() {
        ++pos_;
        std::vector<CodeRange> ranges;
        uint32_t cp = 0;
        if (escape(false, false, ranges, cp)) return char_class(std::move(ranges));
        return char_class({{cp, cp}});
    }

    Expr bracket() {
        ++pos_;
        const bool negated = eat('^');
        std::vector<CodeRange> ranges;
        bool first = true;
        while (!at_end() && (peek() != ']' || first)) {
            first = false;
            uint32_t lo = 0;
            if (eat('\\')) {
                std::vector<CodeRange> set;
                if (escape(true, negated, set, lo)) {
                    ranges = concat(std::move(ranges), set);
                    continue;
                }
            } else {
                if (peek() == '[' && pos_ + 1 < p_.size() && p_[pos_ + 1] == ':')
                    error("POSIX classes are not supported");
                lo = next_code_point();
            }
            uint32_t hi = lo;
            if (peek() == '-' && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
                ++pos_;
                std::vector<CodeRange> set;
                if (eat('\\')) {
                    if (escape(true, negated, set, hi)) error("a range ending in a class");
                } else {
                    hi = next_code_point();
                }
                if (hi < lo) error("a range out of order");
            }
            ranges.push_back({lo, hi});
        }
        if (!eat(']')) error("missing ']'");
        return char_class(std::move(ranges), negated);
    }

    static constexpr int kMaxDepth = 100;
    std::string_view p_;
    size_t pos_ = 0;
    int depth_ = 0;
};

}  // namespace

Expr regex_to_expr(std::string_view pattern, RegexMatch match) {
    return RegexParser(pattern).parse(match);
}

}  // namespace kite::grammar
