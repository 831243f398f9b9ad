#include "template/renderer.h"

#include <cmath>
#include <cstdint>

#include "template/call_args.h"
#include "template/error.h"
#include "template/filters.h"
#include "template/globals.h"
#include "template/methods.h"
#include "template/py_string.h"
#include "template/tests.h"

namespace kite::tmpl {

namespace {

Value undefined(std::string hint) {
    return Value(Undefined{std::move(hint)});
}

[[noreturn]] void raise_undefined(const Value& v) {
    const std::string& hint = v.undefined_hint();
    if (hint.starts_with("SecurityError")) template_fail("{}", hint);
    template_fail("UndefinedError: {}", hint.empty() ? "a value is undefined" : hint);
}

// Python's index normalisation for x[i] (negative counts from the end).
std::optional<size_t> index_in(int64_t i, size_t size) {
    if (i < 0) i += static_cast<int64_t>(size);
    if (i < 0 || i >= static_cast<int64_t>(size)) return std::nullopt;
    return static_cast<size_t>(i);
}

// Python's // and % on integers. Python's integers have no limit; the one result an int64
// cannot hold, INT64_MIN // -1, is an error here (in C++ it is undefined behaviour).
int64_t floor_div(int64_t a, int64_t b) {
    if (b == 0) template_fail("ZeroDivisionError: integer division or modulo by zero");
    if (b == -1) {
        if (a == INT64_MIN) template_fail("OverflowError: integer too large");
        return -a;
    }
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
    if (b == 0) template_fail("ZeroDivisionError: integer division or modulo by zero");
    if (b == -1) return 0;
    const int64_t r = a % b;
    return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

// x ** y for y >= 0 by squaring: at most 63 steps, however large y is.
int64_t int_power(int64_t x, int64_t y) {
    int64_t result = 1;
    while (y > 0) {
        if ((y & 1) && __builtin_mul_overflow(result, x, &result))
            template_fail("OverflowError: integer too large");
        y >>= 1;
        if (y > 0 && __builtin_mul_overflow(x, x, &x))
            template_fail("OverflowError: integer too large");
    }
    return result;
}

Value arithmetic(const std::string& op, const Value& a, const Value& b, size_t max_bytes) {
    if (a.is_undefined()) raise_undefined(a);
    if (b.is_undefined()) raise_undefined(b);
    if (a.is_number() && b.is_number()) {
        const bool ints = !a.is_float() && !b.is_float();
        const int64_t x = ints ? a.as_int() : 0, y = ints ? b.as_int() : 0;
        int64_t r = 0;
        if (op == "+" && ints && !__builtin_add_overflow(x, y, &r)) return Value(r);
        if (op == "-" && ints && !__builtin_sub_overflow(x, y, &r)) return Value(r);
        if (op == "*" && ints && !__builtin_mul_overflow(x, y, &r)) return Value(r);
        if (op == "//" && ints) return Value(floor_div(x, y));
        if (op == "%" && ints) return Value(floor_mod(x, y));
        const double p = a.as_float(), q = b.as_float();
        if (op == "+") return Value(p + q);
        if (op == "-") return Value(p - q);
        if (op == "*") return Value(p * q);
        if ((op == "/" || op == "//" || op == "%") && q == 0)
            template_fail("ZeroDivisionError: division by zero");
        if (op == "/") return Value(p / q);
        if (op == "//") return Value(std::floor(p / q));
        if (op == "%") return Value(p - std::floor(p / q) * q);
        if (op == "**") {
            if (ints && y >= 0) return Value(int_power(x, y));
            return Value(std::pow(p, q));
        }
    }
    if (op == "+" && a.is_string() && b.is_string()) {
        if (a.str().size() + b.str().size() > max_bytes) template_fail("string too long");
        if (!a.is_markup() && !b.is_markup()) return Value(a.str() + b.str());
        // Markup escapes the plain text joined to it.
        return Value::markup((a.is_markup() ? a.str() : html_escape(a.str())) +
                             (b.is_markup() ? b.str() : html_escape(b.str())));
    }
    if (op == "+" && a.is_list() && b.is_list()) {
        List out = a.list();
        out.insert(out.end(), b.list().begin(), b.list().end());
        return Value(std::move(out));
    }
    if (op == "*" && (a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) {
        const int64_t n = std::max<int64_t>(0, b.as_int());
        const size_t unit = a.is_string() ? a.str().size() : a.list().size();
        if (unit > 0 && static_cast<uint64_t>(n) > max_bytes / unit)
            template_fail("repetition result too large");
        if (a.is_string()) {
            std::string out;
            for (int64_t i = 0; i < n; ++i) out += a.str();
            return Value(std::move(out));
        }
        List out;
        for (int64_t i = 0; i < n; ++i) out.insert(out.end(), a.list().begin(), a.list().end());
        return Value(std::move(out));
    }
    if (op == "*" && (a.is_int() || a.is_bool()) && (b.is_string() || b.is_list()))
        return arithmetic(op, b, a, max_bytes);
    if (op == "+" && a.is_string())
        template_fail("TypeError: can only concatenate str (not \"{}\") to str", b.type_name());
    if (op == "+" && a.is_list())
        template_fail("TypeError: can only concatenate list (not \"{}\") to list", b.type_name());
    template_fail("TypeError: unsupported operand type(s) for {}: '{}' and '{}'", op, a.type_name(),
                  b.type_name());
}

}  // namespace

Renderer::Renderer(const Dict& context, const RenderOptions& options)
    : root_(context), options_(options) {
    add_globals(root_);
    for (const auto& [key, value] : context.items) root_.set(key, value);
}

std::string Renderer::render(const Body& body) {
    return capture(body);
}

void Renderer::count_iteration() {
    if (++iterations_ > options_.limits.max_iterations)
        template_fail("the template ran more than {} loop iterations",
                      options_.limits.max_iterations);
}

void Renderer::check_size(size_t bytes) const {
    if (bytes > options_.limits.max_output_bytes)
        template_fail("the template's output passed {} bytes", options_.limits.max_output_bytes);
}

void Renderer::write(std::string_view text) {
    written_ += text.size();
    check_size(written_);
    out_->append(text);
}

std::string Renderer::capture(const Body& body) {
    std::string text;
    std::string* saved = out_;
    out_ = &text;
    try {
        render_body(body);
    } catch (...) {
        out_ = saved;
        throw;
    }
    out_ = saved;
    return text;
}

Value Renderer::lookup(const std::string& name) const {
    for (auto frame = frames_.rbegin(); frame != frames_.rend(); ++frame)
        for (const auto& [key, value] : *frame)
            if (key == name) return value;
    if (const Value* v = root_.find(name)) return *v;
    return undefined("'" + name + "' is undefined");
}

void Renderer::assign(const std::string& name, Value value) {
    if (frames_.empty()) {
        root_.set(name, std::move(value));
        return;
    }
    for (auto& [key, v] : frames_.back())
        if (key == name) {
            v = std::move(value);
            return;
        }
    frames_.back().emplace_back(name, std::move(value));
}

// --- statements ---

Renderer::Flow Renderer::render_body(const Body& body) {
    for (const NodePtr& n : body) {
        const Flow flow = render_node(*n);
        if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
}

Renderer::Flow Renderer::render_node(const Node& n) {
    switch (n.kind) {
        case Node::Kind::Text:
            write(n.text);
            break;
        case Node::Kind::Output: {
            const Value v = eval(*n.expr);
            if (v.is_string())
                write(v.str());
            else
                write(to_str(v));
            break;
        }
        case Node::Kind::If:
            for (size_t i = 0; i < n.conditions.size(); ++i)
                if (eval(*n.conditions[i]).truthy()) return render_body(n.bodies[i]);
            return render_body(n.else_body);
        case Node::Kind::For:
            return render_for(n);
        case Node::Kind::Set:
        case Node::Kind::SetBlock:
            render_set(n);
            break;
        case Node::Kind::Macro:
            assign(n.name, define_macro(n));
            break;
        case Node::Kind::CallBlock: {
            CallArgs args = eval_args(*n.expr);
            Value callee = eval(*n.expr->object);
            // `caller` renders the block's body; its parameters come from the macro.
            auto caller = std::make_shared<Function>();
            caller->name = "caller";
            const Node* block = &n;
            caller->call = [block](CallArgs& a, Renderer& r) {
                return r.call_macro(*block, a, Value());
            };
            args.keyword.emplace_back("caller", Value(caller));
            write(to_str(call(callee, args)));
            break;
        }
        case Node::Kind::FilterBlock:
            write(to_str(apply_filters(n.filters, Value(capture(n.body)))));
            break;
        case Node::Kind::Scope: {
            frames_.emplace_back();
            const Flow flow = render_body(n.body);
            frames_.pop_back();
            return flow;
        }
        case Node::Kind::Break:
            return Flow::Break;
        case Node::Kind::Continue:
            return Flow::Continue;
    }
    return Flow::Normal;
}

namespace {

void bind_targets(std::vector<std::pair<std::string, Value>>& frame,
                  const std::vector<std::string>& targets, const Value& item) {
    auto set = [&](const std::string& name, Value v) {
        for (auto& [key, value] : frame)
            if (key == name) {
                value = std::move(v);
                return;
            }
        frame.emplace_back(name, std::move(v));
    };
    if (targets.size() == 1) {
        set(targets[0], item);
        return;
    }
    const List parts = iterate(item);
    if (parts.size() != targets.size())
        template_fail("ValueError: cannot unpack {} values into {} names", parts.size(),
                      targets.size());
    for (size_t i = 0; i < targets.size(); ++i) set(targets[i], parts[i]);
}

}  // namespace

Renderer::Flow Renderer::render_for(const Node& n) {
    const Value iterable = eval(*n.expr);
    List items = iterate(iterable);
    if (n.condition) {
        // The loop's `if` filters before iterating, so loop.length counts what remains.
        List kept;
        frames_.emplace_back();
        for (const Value& item : items) {
            count_iteration();
            frames_.back().clear();
            bind_targets(frames_.back(), n.targets, item);
            if (eval(*n.condition).truthy()) kept.push_back(item);
        }
        frames_.pop_back();
        items = std::move(kept);
    }
    if (items.empty()) return render_body(n.else_body);
    const auto count = static_cast<int64_t>(items.size());
    auto cycle = std::make_shared<Function>();
    for (int64_t i = 0; i < count; ++i) {
        count_iteration();
        Dict loop;
        loop.items = {{"index", Value(i + 1)},
                      {"index0", Value(i)},
                      {"revindex", Value(count - i)},
                      {"revindex0", Value(count - i - 1)},
                      {"first", Value(i == 0)},
                      {"last", Value(i == count - 1)},
                      {"length", Value(count)},
                      {"depth", Value(1)},
                      {"depth0", Value(0)},
                      {"previtem", i > 0 ? items[static_cast<size_t>(i - 1)]
                                         : undefined("there is no previous item")},
                      {"nextitem", i + 1 < count ? items[static_cast<size_t>(i + 1)]
                                                 : undefined("there is no next item")}};
        cycle->name = "loop.cycle";
        cycle->call = [i](CallArgs& a, Renderer&) {
            if (a.positional.empty()) template_fail("TypeError: no items for cycling given");
            return a.positional[static_cast<size_t>(i) % a.positional.size()];
        };
        loop.items.emplace_back("cycle", Value(cycle));
        frames_.emplace_back();
        frames_.back().emplace_back("loop", Value(std::move(loop)));
        bind_targets(frames_.back(), n.targets, items[static_cast<size_t>(i)]);
        Flow flow = Flow::Normal;
        try {
            flow = render_body(n.body);
        } catch (...) {
            frames_.pop_back();
            throw;
        }
        frames_.pop_back();
        if (flow == Flow::Break) break;
    }
    return Flow::Normal;
}

void Renderer::render_set(const Node& n) {
    Value value = n.kind == Node::Kind::SetBlock ? apply_filters(n.filters, Value(capture(n.body)))
                                                 : eval(*n.expr);
    if (!n.attribute.empty()) {
        Value target = lookup(n.targets[0]);
        if (!target.is_dict() || !target.dict().is_namespace)
            template_fail("TemplateRuntimeError: cannot assign attribute on non-namespace object");
        target.dict_mut().set(n.attribute, std::move(value));
        return;
    }
    if (n.targets.size() == 1) {
        assign(n.targets[0], std::move(value));
        return;
    }
    Frame parts;
    bind_targets(parts, n.targets, value);
    for (auto& [name, v] : parts) assign(name, std::move(v));
}

Value Renderer::define_macro(const Node& n) {
    auto fn = std::make_shared<Function>();
    fn->name = n.name;
    const Node* macro = &n;
    fn->call = [macro](CallArgs& args, Renderer& r) {
        Value caller;
        for (auto it = args.keyword.begin(); it != args.keyword.end(); ++it)
            if (it->first == "caller") {
                caller = it->second;
                args.keyword.erase(it);
                break;
            }
        return r.call_macro(*macro, args, caller);
    };
    return Value(fn);
}

Value Renderer::call_macro(const Node& macro, CallArgs& args, const Value& caller) {
    if (++call_depth_ > options_.limits.max_call_depth) {
        --call_depth_;
        template_fail("RecursionError: macros nested deeper than {} calls",
                      options_.limits.max_call_depth);
    }
    // A macro sees the template's top level and its own arguments, not the caller's scope.
    std::vector<Frame> saved = std::move(frames_);
    frames_.assign(1, Frame{});
    Value result;
    try {
        if (args.positional.size() > macro.params.size())
            template_fail("TypeError: macro '{}' takes not more than {} argument(s)", macro.name,
                          macro.params.size());
        for (size_t i = 0; i < macro.params.size(); ++i) {
            const auto& [name, fallback] = macro.params[i];
            Value v =
                arg(args, i, name, Value(Undefined{"parameter '" + name + "' was not given"}));
            if (v.is_undefined() && fallback) v = eval(*fallback);
            frames_.back().emplace_back(name, std::move(v));
        }
        for (const auto& [key, value] : args.keyword) {
            bool known = false;
            for (const auto& param : macro.params) known = known || param.first == key;
            if (!known)
                template_fail("TypeError: macro '{}' takes no keyword argument '{}'", macro.name,
                              key);
        }
        if (!caller.is_undefined()) frames_.back().emplace_back("caller", caller);
        result = Value(capture(macro.body));
    } catch (...) {
        frames_ = std::move(saved);
        --call_depth_;
        throw;
    }
    frames_ = std::move(saved);
    --call_depth_;
    return result;
}

Value Renderer::apply_filters(const std::vector<ExprPtr>& filters, Value subject) {
    for (const ExprPtr& f : filters) subject = eval_filter(*f, std::move(subject));
    return subject;
}

// --- expressions ---

Value Renderer::eval(const Expr& e) {
    switch (e.kind) {
        case Expr::Kind::Literal:
            return e.value;
        case Expr::Kind::Name:
            return lookup(e.name);
        case Expr::Kind::List: {
            List items;
            items.reserve(e.items.size());
            for (const ExprPtr& item : e.items) items.push_back(eval(*item));
            return e.tuple ? Value::tuple(std::move(items)) : Value(std::move(items));
        }
        case Expr::Kind::Dict: {
            Dict d;
            for (size_t i = 0; i < e.keys.size(); ++i) {
                Value key = eval(*e.keys[i]);
                d.set(std::move(key), eval(*e.items[i]));
            }
            return Value(std::move(d));
        }
        case Expr::Kind::Attr:
            return get_attribute(eval(*e.object), e.name);
        case Expr::Kind::Item:
            return get_item(eval(*e.object), eval(*e.items[0]));
        case Expr::Kind::Slice:
            return eval_slice(e);
        case Expr::Kind::Call:
            return eval_call(e);
        case Expr::Kind::Filter:
            return eval_filter(e, eval(*e.object));
        case Expr::Kind::Test:
            return Value(eval_test(e));
        case Expr::Kind::Unary: {
            const Value v = eval(*e.object);
            if (e.name == "not") return Value(!v.truthy());
            if (v.is_undefined()) raise_undefined(v);
            if (!v.is_number())
                template_fail("TypeError: bad operand type for unary {}: '{}'", e.name,
                              v.type_name());
            if (e.name == "+") return v.is_float() ? v : Value(v.as_int());
            return v.is_float() ? Value(-v.as_float()) : Value(-v.as_int());
        }
        case Expr::Kind::Binary:
            return eval_binary(e);
        case Expr::Kind::Compare:
            return eval_compare(e);
        case Expr::Kind::Cond:
            if (eval(*e.object).truthy()) return eval(*e.items[0]);
            return e.items[1] ? eval(*e.items[1]) : undefined("the condition was false");
    }
    return Value();
}

Value Renderer::eval_binary(const Expr& e) {
    if (e.name == "and") {
        Value left = eval(*e.object);
        return left.truthy() ? eval(*e.other) : left;
    }
    if (e.name == "or") {
        Value left = eval(*e.object);
        return left.truthy() ? left : eval(*e.other);
    }
    const Value left = eval(*e.object);
    const Value right = eval(*e.other);
    if (e.name == "~") {
        std::string s = to_str(left);
        s += to_str(right);
        check_size(s.size());
        return Value(std::move(s));
    }
    if (e.name == "%" && left.is_string())
        template_fail("TypeError: printf-style string formatting is not supported");
    return arithmetic(e.name, left, right, options_.limits.max_output_bytes);
}

Value Renderer::eval_compare(const Expr& e) {
    Value left = eval(*e.object);
    for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.items[i]);
        const std::string& op = e.ops[i];
        bool ok = false;
        if (op == "==") {
            ok = equal(left, right);
        } else if (op == "!=") {
            ok = !equal(left, right);
        } else if (op == "in" || op == "not in") {
            ok = contains(right, left) == (op == "in");
        } else {
            if (left.is_undefined()) raise_undefined(left);
            if (right.is_undefined()) raise_undefined(right);
            if (op == "<") ok = less(left, right);
            if (op == ">") ok = less(right, left);
            if (op == "<=") ok = !less(right, left);
            if (op == ">=") ok = !less(left, right);
        }
        if (!ok) return Value(false);
        left = std::move(right);
    }
    return Value(true);
}

CallArgs Renderer::eval_args(const Expr& e) {
    CallArgs args;
    args.positional.reserve(e.items.size());
    for (const ExprPtr& item : e.items) args.positional.push_back(eval(*item));
    for (const auto& [name, value] : e.keywords) args.keyword.emplace_back(name, eval(*value));
    return args;
}

Value Renderer::eval_call(const Expr& e) {
    Value callee = eval(*e.object);
    CallArgs args = eval_args(e);
    return call(callee, args);
}

Value Renderer::call(const Value& callee, CallArgs& args) {
    if (callee.is_undefined()) raise_undefined(callee);
    if (!callee.is_function())
        template_fail("TypeError: '{}' object is not callable", callee.type_name());
    return callee.function().call(args, *this);
}

Value Renderer::eval_filter(const Expr& e, Value subject) {
    CallArgs args = eval_args(e);
    Value result = apply_filter(e.name, subject, args, *this);
    if (result.is_string()) check_size(result.str().size());
    return result;
}

Value Renderer::eval_test(const Expr& e) {
    const Value subject = eval(*e.object);
    CallArgs args = eval_args(e);
    return Value(apply_test(e.name, subject, args, *this) != e.negated);
}

Value Renderer::get_attribute(const Value& object, const std::string& name) {
    if (object.is_undefined()) raise_undefined(object);
    if (std::optional<Value> m = method(object, name)) return *m;
    if (object.is_dict())
        if (const Value* v = object.dict().find(name)) return *v;
    return undefined("'" + std::string(object.is_dict() ? "dict" : object.type_name()) +
                     " object' has no attribute '" + name + "'");
}

Value Renderer::get_item(const Value& object, const Value& key) {
    if (object.is_undefined()) raise_undefined(object);
    // jinja2 turns a failed lookup (an unhashable key included) into an undefined value.
    if (object.is_dict() && hashable(key))
        if (const Value* v = object.dict().find_key(key)) return *v;
    if (object.is_dict() && key.is_string()) {
        if (std::optional<Value> m = method(object, key.str())) return *m;
        return undefined("'dict object' has no attribute '" + key.str() + "'");
    }
    if ((object.is_list() || object.is_string()) && (key.is_int() || key.is_bool())) {
        if (object.is_list()) {
            if (auto i = index_in(key.as_int(), object.list().size())) return object.list()[*i];
        } else {
            const auto cps = code_points(object.str());
            if (auto i = index_in(key.as_int(), cps.size())) return Value(cps[*i]);
        }
        return undefined(
            fmt::format("'{} object' has no element {}", object.type_name(), key.as_int()));
    }
    if (key.is_string())
        if (std::optional<Value> m = method(object, key.str())) return *m;
    return undefined(
        fmt::format("'{} object' has no attribute {}", object.type_name(), to_repr(key)));
}

Value Renderer::eval_slice(const Expr& e) {
    const Value object = eval(*e.object);
    if (object.is_undefined()) raise_undefined(object);
    auto bound = [&](const ExprPtr& p) -> std::optional<int64_t> {
        if (!p) return std::nullopt;
        const Value v = eval(*p);
        if (v.is_none()) return std::nullopt;
        if (!v.is_int() && !v.is_bool())
            template_fail("TypeError: slice indices must be integers or None");
        return v.as_int();
    };
    const std::optional<int64_t> start = bound(e.items[0]), stop = bound(e.items[1]);
    const int64_t step = bound(e.items[2]).value_or(1);
    if (step == 0) template_fail("ValueError: slice step cannot be zero");
    std::vector<std::string_view> cps;
    if (object.is_string())
        cps = code_points(object.str());
    else if (!object.is_list())
        template_fail("TypeError: '{}' object is not subscriptable", object.type_name());
    const auto size = static_cast<int64_t>(object.is_string() ? cps.size() : object.list().size());
    // Python's slice.indices().
    auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
        if (!v) return fallback;
        int64_t x = *v < 0 ? *v + size : *v;
        if (step > 0) return std::clamp<int64_t>(x, 0, size);
        return std::clamp<int64_t>(x, -1, size - 1);
    };
    const int64_t from = clamp(start, step > 0 ? 0 : size - 1);
    const int64_t to = clamp(stop, step > 0 ? size : -1);
    std::string s;
    List l;
    for (int64_t i = from; step > 0 ? i < to : i > to; i += step) {
        if (object.is_string())
            s += cps[static_cast<size_t>(i)];
        else
            l.push_back(object.list()[static_cast<size_t>(i)]);
    }
    if (object.is_string()) return Value(std::move(s));
    return object.is_tuple() ? Value::tuple(std::move(l)) : Value(std::move(l));
}

}  // namespace kite::tmpl
