#include "template/parser.h"

#include <charconv>
#include <cstdlib>
#include <set>

#include "template/error.h"
#include "template/lexer.h"

namespace kite::tmpl {

namespace {

using Type = Token::Type;

class Parser {
  public:
    explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

    Body parse() {
        Body body = parse_body({});
        if (peek().type != Type::End) fail_here("unexpected tag");
        return body;
    }

  private:
    // Guards recursion: every nested construct passes through one of these.
    struct Nest {
        explicit Nest(Parser& p) : p_(p) {
            if (++p_.depth_ > kMaxNesting) p_.fail_here("template nested too deeply");
        }
        ~Nest() { --p_.depth_; }
        Parser& p_;
    };

    const Token& peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
    const Token& next() {
        const Token& t = t_[i_];
        if (i_ + 1 < t_.size()) ++i_;
        return t;
    }
    [[noreturn]] void fail_here(std::string_view what) const {
        const Token& t = peek();
        template_fail("TemplateSyntaxError: line {}: {}{}", t.line, what,
                      t.text.empty() ? "" : " near '" + t.text + "'");
    }
    bool is_op(std::string_view op, size_t ahead = 0) const {
        return peek(ahead).type == Type::Operator && peek(ahead).text == op;
    }
    bool is_name(std::string_view name, size_t ahead = 0) const {
        return peek(ahead).type == Type::Name && peek(ahead).text == name;
    }
    bool accept_op(std::string_view op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool accept_name(std::string_view name) {
        if (!is_name(name)) return false;
        next();
        return true;
    }
    void expect_op(std::string_view op) {
        if (!accept_op(op)) fail_here(fmt::format("expected '{}'", op));
    }
    void expect_name(std::string_view name) {
        if (!accept_name(name)) fail_here(fmt::format("expected '{}'", name));
    }
    std::string expect_identifier() {
        if (peek().type != Type::Name) fail_here("expected a name");
        return next().text;
    }
    void expect_block_end() {
        if (peek().type != Type::BlockEnd) fail_here("expected the end of the tag");
        next();
    }

    // --- statements ---

    // Parses until a block tag whose keyword is in `stops` (left unconsumed), or the end.
    Body parse_body(const std::set<std::string_view>& stops) {
        Nest nest(*this);
        Body body;
        while (true) {
            const Token& t = peek();
            if (t.type == Type::End) {
                if (!stops.empty()) fail_here("unexpected end of template (missing an end tag)");
                return body;
            }
            if (t.type == Type::Text) {
                auto n = node(Node::Kind::Text);
                n->text = next().text;
                body.push_back(std::move(n));
            } else if (t.type == Type::VarBegin) {
                next();
                auto n = node(Node::Kind::Output);
                n->expr = parse_expression();
                if (peek().type != Type::VarEnd) fail_here("expected '}}'");
                next();
                body.push_back(std::move(n));
            } else {
                if (peek(1).type == Type::Name && stops.count(peek(1).text)) return body;
                next();
                body.push_back(parse_statement());
            }
        }
    }

    NodePtr node(Node::Kind kind) const {
        auto n = std::make_unique<Node>();
        n->kind = kind;
        n->line = peek().line;
        return n;
    }

    NodePtr parse_statement() {
        const std::string keyword = expect_identifier();
        if (keyword == "if") return parse_if();
        if (keyword == "for") return parse_for();
        if (keyword == "set") return parse_set();
        if (keyword == "macro") return parse_macro();
        if (keyword == "call") return parse_call_block();
        if (keyword == "filter") return parse_filter_block();
        if (keyword == "generation") return parse_scope("endgeneration");
        if (keyword == "break" || keyword == "continue") {
            auto n = node(keyword == "break" ? Node::Kind::Break : Node::Kind::Continue);
            expect_block_end();
            return n;
        }
        --i_;
        fail_here(fmt::format("unknown or unsupported tag '{}'", keyword));
    }

    void end_tag(std::string_view name) {
        next();  // {%
        expect_name(name);
        expect_block_end();
    }

    NodePtr parse_if() {
        auto n = node(Node::Kind::If);
        n->conditions.push_back(parse_expression());
        expect_block_end();
        while (true) {
            n->bodies.push_back(parse_body({"elif", "else", "endif"}));
            next();  // {%
            const std::string keyword = next().text;
            if (keyword == "elif") {
                n->conditions.push_back(parse_expression());
                expect_block_end();
            } else if (keyword == "else") {
                expect_block_end();
                n->else_body = parse_body({"endif"});
                end_tag("endif");
                return n;
            } else {
                expect_block_end();
                return n;
            }
        }
    }

    std::vector<std::string> parse_targets() {
        std::vector<std::string> targets;
        const bool paren = accept_op("(");
        do targets.push_back(expect_identifier());
        while (accept_op(","));
        if (paren) expect_op(")");
        return targets;
    }

    NodePtr parse_for() {
        auto n = node(Node::Kind::For);
        n->targets = parse_targets();
        expect_name("in");
        n->expr = parse_condition_free();
        if (accept_name("if")) n->condition = parse_expression();
        if (is_name("recursive")) fail_here("recursive loops are not supported");
        expect_block_end();
        n->body = parse_body({"else", "endfor"});
        if (is_name("else", 1)) {
            end_tag("else");
            n->else_body = parse_body({"endfor"});
        }
        end_tag("endfor");
        return n;
    }

    NodePtr parse_set() {
        auto n = node(Node::Kind::Set);
        if (peek().type == Type::Name && is_op(".", 1)) {
            n->targets.push_back(next().text);
            next();
            n->attribute = expect_identifier();
        } else {
            n->targets = parse_targets();
        }
        if (accept_op("=")) {
            n->expr = parse_tuple_or_expression();
            expect_block_end();
            return n;
        }
        if (n->targets.size() != 1 || !n->attribute.empty()) fail_here("expected '='");
        n->kind = Node::Kind::SetBlock;
        while (accept_op("|")) n->filters.push_back(parse_filter(nullptr));
        expect_block_end();
        n->body = parse_body({"endset"});
        end_tag("endset");
        return n;
    }

    void parse_params(Node& n) {
        expect_op("(");
        while (!accept_op(")")) {
            std::string name = expect_identifier();
            ExprPtr fallback = accept_op("=") ? parse_expression() : nullptr;
            n.params.emplace_back(std::move(name), std::move(fallback));
            if (!is_op(")")) expect_op(",");
        }
    }

    NodePtr parse_macro() {
        auto n = node(Node::Kind::Macro);
        n->name = expect_identifier();
        parse_params(*n);
        expect_block_end();
        n->body = parse_body({"endmacro"});
        end_tag("endmacro");
        return n;
    }

    NodePtr parse_call_block() {
        auto n = node(Node::Kind::CallBlock);
        if (is_op("(")) parse_params(*n);
        n->expr = parse_expression();
        if (n->expr->kind != Expr::Kind::Call) fail_here("expected a call");
        expect_block_end();
        n->body = parse_body({"endcall"});
        end_tag("endcall");
        return n;
    }

    NodePtr parse_filter_block() {
        auto n = node(Node::Kind::FilterBlock);
        do n->filters.push_back(parse_filter(nullptr));
        while (accept_op("|"));
        expect_block_end();
        n->body = parse_body({"endfilter"});
        end_tag("endfilter");
        return n;
    }

    NodePtr parse_scope(std::string_view end) {
        auto n = node(Node::Kind::Scope);
        expect_block_end();
        n->body = parse_body({end});
        end_tag(end);
        return n;
    }

    // --- expressions ---

    ExprPtr expr(Expr::Kind kind) const {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->line = peek().line;
        return e;
    }

    // `a, b` without brackets (set x = 1, 2) is a tuple.
    ExprPtr parse_tuple_or_expression() {
        ExprPtr first = parse_expression();
        if (!is_op(",")) return first;
        auto list = expr(Expr::Kind::List);
        list->tuple = true;
        list->items.push_back(std::move(first));
        while (accept_op(",")) list->items.push_back(parse_expression());
        return list;
    }

    ExprPtr parse_expression() {
        Nest nest(*this);
        ExprPtr e = parse_or();
        while (is_name("if")) {
            next();
            auto cond = expr(Expr::Kind::Cond);
            cond->object = parse_or();
            cond->items.push_back(std::move(e));
            cond->items.push_back(accept_name("else") ? parse_expression() : nullptr);
            e = std::move(cond);
        }
        return e;
    }

    // A for loop's iterable: an expression without a conditional (its `if` filters items).
    ExprPtr parse_condition_free() { return parse_or(); }

    ExprPtr binary(std::string op, ExprPtr left, ExprPtr right) const {
        auto e = expr(Expr::Kind::Binary);
        e->name = std::move(op);
        e->object = std::move(left);
        e->other = std::move(right);
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr e = parse_and();
        while (accept_name("or")) e = binary("or", std::move(e), parse_and());
        return e;
    }

    ExprPtr parse_and() {
        ExprPtr e = parse_not();
        while (accept_name("and")) e = binary("and", std::move(e), parse_not());
        return e;
    }

    ExprPtr parse_not() {
        if (!is_name("not")) return parse_compare();
        Nest nest(*this);
        next();
        auto e = expr(Expr::Kind::Unary);
        e->name = "not";
        e->object = parse_not();
        return e;
    }

    ExprPtr parse_compare() {
        ExprPtr left = parse_math1();
        ExprPtr cmp;
        while (true) {
            std::string op;
            const Token& t = peek();
            if (t.type == Type::Operator && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                             t.text == "<=" || t.text == ">" || t.text == ">=")) {
                op = next().text;
            } else if (is_name("in")) {
                next();
                op = "in";
            } else if (is_name("not") && is_name("in", 1)) {
                next();
                next();
                op = "not in";
            } else {
                break;
            }
            if (!cmp) {
                cmp = expr(Expr::Kind::Compare);
                cmp->object = std::move(left);
            }
            cmp->ops.push_back(op);
            cmp->items.push_back(parse_math1());
        }
        return cmp ? std::move(cmp) : std::move(left);
    }

    ExprPtr parse_math1() {
        ExprPtr e = parse_concat();
        while (is_op("+") || is_op("-")) {
            std::string op = next().text;
            e = binary(op, std::move(e), parse_concat());
        }
        return e;
    }

    ExprPtr parse_concat() {
        ExprPtr e = parse_math2();
        while (accept_op("~")) e = binary("~", std::move(e), parse_math2());
        return e;
    }

    ExprPtr parse_math2() {
        ExprPtr e = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            std::string op = next().text;
            e = binary(op, std::move(e), parse_pow());
        }
        return e;
    }

    ExprPtr parse_pow() {
        ExprPtr e = parse_unary(true);
        while (accept_op("**")) e = binary("**", std::move(e), parse_unary(true));
        return e;
    }

    ExprPtr parse_unary(bool with_filter) {
        Nest nest(*this);
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            e = expr(Expr::Kind::Unary);
            e->name = next().text;
            e->object = parse_unary(false);
        } else {
            e = parse_postfix(parse_primary());
        }
        return with_filter ? parse_filter_expr(std::move(e)) : std::move(e);
    }

    ExprPtr parse_primary() {
        Nest nest(*this);
        const Token& t = peek();
        if (t.type == Type::Name) {
            static const std::set<std::string_view> kTrue{"true", "True"}, kFalse{"false", "False"},
                kNone{"none", "None"};
            auto e = expr(Expr::Kind::Literal);
            const std::string name = next().text;
            if (kTrue.count(name)) {
                e->value = Value(true);
            } else if (kFalse.count(name)) {
                e->value = Value(false);
            } else if (kNone.count(name)) {
                e->value = Value(None{});
            } else {
                e->kind = Expr::Kind::Name;
                e->name = name;
            }
            return e;
        }
        if (t.type == Type::String) {
            auto e = expr(Expr::Kind::Literal);
            std::string s = next().text;
            while (peek().type == Type::String) s += next().text;  // adjacent literals join
            e->value = Value(std::move(s));
            return e;
        }
        if (t.type == Type::Int || t.type == Type::Float) return parse_number();
        if (accept_op("(")) {
            auto list = expr(Expr::Kind::List);
            list->tuple = true;
            if (accept_op(")")) return list;
            ExprPtr first = parse_expression();
            if (accept_op(")")) return first;
            list->items.push_back(std::move(first));
            while (accept_op(",") && !is_op(")")) list->items.push_back(parse_expression());
            expect_op(")");
            return list;
        }
        if (accept_op("[")) {
            auto list = expr(Expr::Kind::List);
            while (!accept_op("]")) {
                list->items.push_back(parse_expression());
                if (!is_op("]")) expect_op(",");
            }
            return list;
        }
        if (accept_op("{")) {
            auto dict = expr(Expr::Kind::Dict);
            while (!accept_op("}")) {
                dict->keys.push_back(parse_expression());
                expect_op(":");
                dict->items.push_back(parse_expression());
                if (!is_op("}")) expect_op(",");
            }
            return dict;
        }
        fail_here("expected an expression");
    }

    ExprPtr parse_number() {
        auto e = expr(Expr::Kind::Literal);
        const Token& t = next();
        if (t.type == Type::Float) {
            // strtod, as Python's float(): inf on overflow and 0 on underflow, no exception.
            e->value = Value(std::strtod(t.text.c_str(), nullptr));
        } else {
            int64_t v = 0;
            auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
            if (ec != std::errc())
                template_fail("line {}: integer {} is too large", t.line, t.text);
            e->value = Value(v);
        }
        return e;
    }

    ExprPtr parse_postfix(ExprPtr e) {
        while (true) {
            if (is_op(".")) {
                next();
                auto attr = expr(Expr::Kind::Attr);
                if (peek().type == Type::Int) {
                    attr->kind = Expr::Kind::Item;
                    attr->items.push_back(parse_number());
                } else {
                    attr->name = expect_identifier();
                }
                attr->object = std::move(e);
                e = std::move(attr);
            } else if (is_op("[")) {
                next();
                e = parse_subscript(std::move(e));
            } else if (is_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr object) {
        Nest nest(*this);
        std::vector<ExprPtr> parts(1);
        bool slice = false;
        if (!is_op(":")) parts[0] = parse_expression();
        while (accept_op(":")) {
            slice = true;
            parts.emplace_back(is_op(":") || is_op("]") ? nullptr : parse_expression());
        }
        expect_op("]");
        if (parts.size() > 3) fail_here("a slice has at most three parts");
        auto e = expr(slice ? Expr::Kind::Slice : Expr::Kind::Item);
        e->object = std::move(object);
        e->items = std::move(parts);
        if (slice) e->items.resize(3);
        return e;
    }

    void parse_args(Expr& call) {
        expect_op("(");
        while (!accept_op(")")) {
            if (peek().type == Type::Name && is_op("=", 1)) {
                std::string name = next().text;
                next();
                call.keywords.emplace_back(std::move(name), parse_expression());
            } else {
                call.items.push_back(parse_expression());
            }
            if (!is_op(")")) expect_op(",");
        }
    }

    ExprPtr parse_call(ExprPtr callee) {
        Nest nest(*this);
        auto e = expr(Expr::Kind::Call);
        e->object = std::move(callee);
        parse_args(*e);
        return e;
    }

    ExprPtr parse_filter(ExprPtr object) {
        Nest nest(*this);
        auto e = expr(Expr::Kind::Filter);
        e->object = std::move(object);
        e->name = expect_identifier();
        while (accept_op(".")) e->name += "." + expect_identifier();
        if (is_op("(")) parse_args(*e);
        return e;
    }

    ExprPtr parse_filter_expr(ExprPtr e) {
        while (true) {
            if (accept_op("|")) {
                e = parse_filter(std::move(e));
            } else if (is_name("is")) {
                next();
                e = parse_test(std::move(e));
            } else if (is_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_test(ExprPtr object) {
        Nest nest(*this);
        auto e = expr(Expr::Kind::Test);
        e->negated = accept_name("not");
        e->object = std::move(object);
        e->name = expect_identifier();
        if (is_op("(")) {
            parse_args(*e);
        } else if (starts_argument()) {
            e->items.push_back(parse_postfix(parse_primary()));
        }
        return e;
    }

    // A test's single argument without parentheses (`x is sameas false`).
    bool starts_argument() const {
        const Token& t = peek();
        if (t.type == Type::Name)
            return t.text != "else" && t.text != "or" && t.text != "and" && t.text != "is" &&
                   t.text != "if" && t.text != "in" && t.text != "not";
        return t.type == Type::String || t.type == Type::Int || t.type == Type::Float ||
               is_op("[") || is_op("{");
    }

    std::vector<Token> t_;
    size_t i_ = 0;
    int depth_ = 0;
};

}  // namespace

Body parse_template(std::string_view source) {
    return Parser(tokenize(source)).parse();
}

}  // namespace kite::tmpl
