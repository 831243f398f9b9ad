#include "grammar/gbnf.h"

#include <fmt/format.h>

#include "core/utf8.h"
#include "grammar/regular_automaton.h"
#include "grammar/rule_inlining.h"

namespace kite::grammar {

namespace {

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

class GbnfParser {
  public:
    explicit GbnfParser(std::string_view text) : t_(text) {}

    std::shared_ptr<const Grammar> parse() {
        skip_space();
        while (!at_end()) {
            const std::string name = read_name();
            skip_space();
            if (!eat("::=")) error("expected '::='");
            Expr body = alternatives();
            // Defining a rule again adds alternatives.
            if (auto [it, added] = rules_.try_emplace(name, std::move(body)); !added)
                it->second = alt({std::move(it->second), std::move(body)});
            else
                order_.push_back(name);
            skip_space();
        }
        define_rules();
        if (!b_.defined("root")) throw GrammarError("GBNF: no 'root' rule");
        return b_.build("root");
    }

  private:
    // A rule whose references never lead back to it is regular: written out in place of its
    // references, it is built as its automaton where its loops could split text many ways
    // (GrammarBuilder::lower_regular), and as written where not.
    void define_rules() {
        RuleInliner inliner(rules_);
        for (const std::string& name : order_) {
            const Expr& body = rules_.at(name);
            if (!refers(body)) {
                b_.define(name, regular(body));
            } else if (std::optional<Expr> whole = inliner.inlined(name);
                       whole && may_split_many_ways(*whole)) {
                // Asked here, not left to lower_regular: a Regular part is lowered into a
                // helper rule, one more item per use for a rule that needs no automaton.
                b_.define(name, regular(std::move(*whole), body));
            } else {
                b_.define(name, body);
            }
        }
    }

    [[noreturn]] void error(std::string_view what) const {
        size_t line = 1;
        for (size_t i = 0; i < pos_ && i < t_.size(); ++i) line += t_[i] == '\n';
        throw GrammarError(fmt::format("GBNF line {}: {}", line, what));
    }
    bool at_end() const { return pos_ >= t_.size(); }
    char peek() const { return at_end() ? '\0' : t_[pos_]; }
    bool eat(std::string_view s) {
        if (t_.substr(pos_, s.size()) != s) return false;
        pos_ += s.size();
        return true;
    }

    void skip_space() {
        while (!at_end()) {
            if (peek() == '#') {
                while (!at_end() && peek() != '\n') ++pos_;
            } else if (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r') {
                ++pos_;
            } else {
                return;
            }
        }
    }

    std::string read_name() {
        const size_t start = pos_;
        while (!at_end() && is_name_char(peek())) ++pos_;
        if (pos_ == start) error(fmt::format("expected a rule name, got '{}'", peek()));
        return std::string(t_.substr(start, pos_ - start));
    }

    // Whether a new rule (`name ::=`) starts here: the current rule ends before it.
    bool at_rule_start() {
        const size_t save = pos_;
        while (!at_end() && is_name_char(peek())) ++pos_;
        const bool named = pos_ > save;
        skip_space();
        const bool rule = named && t_.substr(pos_, 3) == "::=";
        pos_ = save;
        return rule;
    }

    Expr alternatives() {
        std::vector<Expr> alts;
        alts.push_back(sequence());
        while (eat("|")) alts.push_back(sequence());
        return alt(std::move(alts));
    }

    Expr sequence() {
        std::vector<Expr> items;
        for (;;) {
            skip_space();
            if (at_end() || peek() == '|' || peek() == ')' || at_rule_start()) break;
            Expr item = primary();
            items.push_back(postfix(std::move(item)));
        }
        if (items.empty()) return empty();
        return seq(std::move(items));
    }

    uint32_t number() {
        uint64_t v = 0;
        const size_t start = pos_;
        while (peek() >= '0' && peek() <= '9') {
            v = v * 10 + static_cast<uint64_t>(t_[pos_++] - '0');
            if (v > 100000) error("a repetition count is too large");
        }
        if (pos_ == start) error("expected a number");
        return static_cast<uint32_t>(v);
    }

    Expr postfix(Expr item) {
        for (;;) {
            if (eat("*")) {
                item = star(std::move(item));
            } else if (eat("+")) {
                item = plus(std::move(item));
            } else if (eat("?")) {
                item = opt(std::move(item));
            } else if (eat("{")) {
                skip_space();
                uint32_t min = peek() == ',' ? 0 : number(), max = min;
                skip_space();
                if (eat(",")) {
                    skip_space();
                    max = peek() == '}' ? kUnbounded : number();
                    skip_space();
                }
                if (!eat("}")) error("expected '}'");
                if (max != kUnbounded && min > max) error("a repetition has min above max");
                item = repeat(std::move(item), min, max);
            } else {
                return item;
            }
        }
    }

    uint32_t hex(int n) {
        uint32_t v = 0;
        for (int i = 0; i < n; ++i) {
            const char c = peek();
            const int d = c >= '0' && c <= '9'   ? c - '0'
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : -1;
            if (d < 0) error("a bad hex escape");
            v = v * 16 + static_cast<uint32_t>(d);
            ++pos_;
        }
        return v;
    }

    // One character of a literal or class, escapes decoded.
    uint32_t character() {
        if (at_end()) error("unexpected end of the grammar");
        if (eat("\\")) {
            const char c = peek();
            ++pos_;
            switch (c) {
                case 'n':
                    return '\n';
                case 't':
                    return '\t';
                case 'r':
                    return '\r';
                case 'x':
                    return hex(2);
                case 'u':
                    return hex(4);
                case 'U':
                    return hex(8);
                case '\\':
                case '"':
                case '[':
                case ']':
                case '-':
                case '^':
                case '\'':
                    return static_cast<uint32_t>(c);
                default:
                    error(fmt::format("unknown escape '\\{}'", c));
            }
        }
        const Utf8Sequence s = next_utf8_sequence(t_.substr(pos_));
        if (s.status != Utf8Status::Complete) error("invalid UTF-8");
        const uint32_t cp = decode_utf8(t_.substr(pos_, s.length));
        pos_ += s.length;
        return cp;
    }

    Expr primary() {
        if (eat("(")) {
            if (++depth_ > kMaxDepth) error("groups nest too deeply");
            Expr inner = alternatives();
            skip_space();
            if (!eat(")")) error("expected ')'");
            --depth_;
            return inner;
        }
        if (eat("\"")) {
            std::string bytes;
            while (!at_end() && peek() != '"') {
                const uint32_t cp = character();
                if (cp > kMaxCodePoint) error("a code point beyond U+10FFFF");
                append_utf8(cp, bytes);
            }
            if (!eat("\"")) error("unterminated string");
            return lit(std::move(bytes));
        }
        if (eat("[")) {
            const bool negated = eat("^");
            std::vector<CodeRange> ranges;
            while (!at_end() && peek() != ']') {
                const uint32_t lo = character();
                uint32_t hi = lo;
                if (peek() == '-' && pos_ + 1 < t_.size() && t_[pos_ + 1] != ']') {
                    ++pos_;
                    hi = character();
                    if (hi < lo) error("a range out of order");
                }
                ranges.push_back({lo, hi});
            }
            if (!eat("]")) error("unterminated character class");
            return char_class(std::move(ranges), negated);
        }
        if (eat(".")) return char_class({{0, kMaxCodePoint}});
        if (is_name_char(peek())) return ref(read_name());
        error(fmt::format("unexpected '{}'", peek()));
    }

    static constexpr int kMaxDepth = 100;
    std::string_view t_;
    size_t pos_ = 0;
    int depth_ = 0;
    std::map<std::string, Expr> rules_;
    std::vector<std::string> order_;  // the rules in the order the text defines them
    GrammarBuilder b_;
};

}  // namespace

std::shared_ptr<const Grammar> compile_gbnf(std::string_view text) {
    return GbnfParser(text).parse();
}

}  // namespace kite::grammar
