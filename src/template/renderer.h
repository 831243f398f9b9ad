// Runs a parsed template: evaluates expressions, walks statements, keeps the scopes Jinja2
// keeps (a for loop, a macro call and a {% generation %} block each have their own; `if` and
// the top level share the template's), and enforces the sandbox limits.
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "template/ast.h"
#include "template/value.h"

namespace kite::tmpl {

// What a hostile template can consume before rendering fails.
struct RenderLimits {
    size_t max_output_bytes = 16u << 20;  // all text written, macro results included
    int64_t max_iterations = 1'000'000;   // loop iterations, all loops together
    int max_call_depth = 100;             // nested macro calls
};

struct RenderOptions {
    RenderLimits limits;
    // A fixed time for strftime_now(), formatted as UTC (reproducible renderings); empty: the
    // current local time.
    std::optional<std::time_t> now;
};

class Renderer {
  public:
    Renderer(const Dict& context, const RenderOptions& options);

    std::string render(const Body& body);

    Value eval(const Expr& e);
    Value call(const Value& callee, CallArgs& args);
    // Jinja2's getattr (attribute, then item) and getitem (item, then attribute).
    Value get_attribute(const Value& object, const std::string& name);
    Value get_item(const Value& object, const Value& key);
    // Applies the filter chain `filters` (Filter expressions without an object) to `subject`.
    Value apply_filters(const std::vector<ExprPtr>& filters, Value subject);

    // Counts work against the limits; throws when a limit is passed.
    void count_iteration();
    void check_size(size_t bytes) const;
    const RenderOptions& options() const { return options_; }

  private:
    enum class Flow { Normal, Break, Continue };
    using Frame = std::vector<std::pair<std::string, Value>>;

    Flow render_body(const Body& body);
    Flow render_node(const Node& n);
    Flow render_for(const Node& n);
    void render_set(const Node& n);
    Value define_macro(const Node& n);
    Value call_macro(const Node& macro, CallArgs& args, const Value& caller);
    std::string capture(const Body& body);
    void write(std::string_view text);

    Value lookup(const std::string& name) const;
    void assign(const std::string& name, Value value);
    Value eval_binary(const Expr& e);
    Value eval_compare(const Expr& e);
    Value eval_call(const Expr& e);
    Value eval_filter(const Expr& e, Value subject);
    Value eval_test(const Expr& e);
    Value eval_slice(const Expr& e);
    CallArgs eval_args(const Expr& e);

    Dict root_;                  // the context and top-level assignments
    std::vector<Frame> frames_;  // nested scopes, innermost last
    std::string* out_ = nullptr;
    size_t written_ = 0;
    int64_t iterations_ = 0;
    int call_depth_ = 0;
    RenderOptions options_;
};

}  // namespace kite::tmpl
