// The values templates compute with, with Python's semantics (Jinja2 runs on Python, and chat
// templates rely on it): truthiness, equality and ordering, `in`, str() and repr(). Strings
// are UTF-8; lists and dicts are shared by reference, as Python objects are (a namespace's
// attributes change in place). Dicts keep insertion order, and their keys are any hashable
// value, compared as Python compares them (1, 1.0 and True are the same key).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kite::tmpl {

class Value;
class Renderer;

struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

using List = std::vector<Value>;

struct Dict {
    std::vector<std::pair<Value, Value>> items;
    bool is_namespace = false;  // namespace(): attributes may be assigned with `set ns.x`

    // The value under the string key `key` (what attribute lookup and variables use).
    const Value* find(std::string_view key) const;
    // The value under any key, found as Python's dict finds it; raises for an unhashable key.
    const Value* find_key(const Value& key) const;
    // d[key] = value: an equal key already there keeps its place (and its own type).
    void set(Value key, Value value);
};

struct Function {
    std::string name;
    std::function<Value(CallArgs&, Renderer&)> call;
};

// Jinja's Undefined: what a missing variable, key or attribute evaluates to. It prints as
// nothing and is false, but most operations on it raise (the name says what was missing).
struct Undefined {
    std::string hint;
};
struct None {};

class Value {
  public:
    enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Function };

    Value() : v_(Undefined{}) {}
    Value(None) : v_(None{}) {}
    Value(Undefined u) : v_(std::move(u)) {}
    Value(bool b) : v_(b) {}
    Value(int64_t i) : v_(i) {}
    Value(int i) : v_(static_cast<int64_t>(i)) {}
    Value(double f) : v_(f) {}
    Value(std::string s) : v_(std::move(s)) {}
    Value(std::string_view s) : v_(std::string(s)) {}
    Value(const char* s) : v_(std::string(s)) {}
    Value(List l) : v_(std::make_shared<List>(std::move(l))) {}
    Value(Dict d) : v_(std::make_shared<Dict>(std::move(d))) {}
    Value(std::shared_ptr<List> l) : v_(std::move(l)) {}
    Value(std::shared_ptr<Dict> d) : v_(std::move(d)) {}
    Value(std::shared_ptr<Function> f) : v_(std::move(f)) {}

    // What map/select/selectattr return: a lazy generator in Python. It iterates like a list,
    // but has no len(), is always true and is not JSON serializable.
    static Value generator(List items);
    // Markup (what `safe` and `escape` return): plain text added to it with `+` is
    // HTML-escaped first, as Python's markupsafe does. `~` and filters give plain strings.
    static Value markup(std::string text);
    // A tuple: a list that prints with parentheses, is hashable (a dict key) and is never
    // equal to a list, as in Python. Tuple literals, dict items and partition() make them.
    static Value tuple(List items);

    Kind kind() const { return static_cast<Kind>(v_.index()); }
    bool is_undefined() const { return kind() == Kind::Undefined; }
    bool is_none() const { return kind() == Kind::None; }
    bool is_bool() const { return kind() == Kind::Bool; }
    bool is_int() const { return kind() == Kind::Int; }
    bool is_float() const { return kind() == Kind::Float; }
    bool is_number() const { return is_int() || is_float() || is_bool(); }
    bool is_string() const { return kind() == Kind::String; }
    bool is_list() const { return kind() == Kind::List; }
    bool is_dict() const { return kind() == Kind::Dict; }
    bool is_function() const { return kind() == Kind::Function; }
    bool is_generator() const { return generator_; }
    bool is_markup() const { return markup_; }
    bool is_tuple() const { return tuple_; }

    // The accessors raise TemplateError on a value of another type, so a template that passes
    // the wrong type to a filter gets an error, never a crash.
    bool as_bool() const { return get<bool>("a boolean"); }
    int64_t as_int() const { return is_bool() ? as_bool() : get<int64_t>("an integer"); }
    double as_float() const;  // any number
    const std::string& str() const { return get<std::string>("a string"); }
    const List& list() const { return *get<std::shared_ptr<List>>("a list"); }
    List& list_mut() { return *get<std::shared_ptr<List>>("a list"); }
    const Dict& dict() const { return *get<std::shared_ptr<Dict>>("a dict"); }
    Dict& dict_mut() { return *get<std::shared_ptr<Dict>>("a dict"); }
    const Function& function() const { return *get<std::shared_ptr<Function>>("a function"); }
    const std::string& undefined_hint() const { return std::get<Undefined>(v_).hint; }

    // Python's bool(x).
    bool truthy() const;
    // Python's type name, for error messages ('str', 'list', 'dict object', ...).
    const char* type_name() const;

  private:
    template <typename T>
    const T& get(const char* wanted) const {
        if (const T* p = std::get_if<T>(&v_)) return *p;
        wrong_type(wanted);
    }
    [[noreturn]] void wrong_type(const char* wanted) const;

    std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<List>,
                 std::shared_ptr<Dict>, std::shared_ptr<Function>>
        v_;
    bool generator_ = false;
    bool markup_ = false;
    bool tuple_ = false;
};

// Python's str(x) (what {{ x }} prints) and repr(x) (how containers print their items).
std::string to_str(const Value& v);
std::string to_repr(const Value& v);
// Python's repr of a float: shortest round-trip digits, '1.0', '1e-05', 'inf'.
std::string float_repr(double f);

// Whether Python can hash the value (use it as a dict key): not lists, dicts or generators, nor
// tuples holding them.
bool hashable(const Value& v);
// Raises Python's TypeError for a value that cannot be a dict key.
void require_hashable(const Value& key);

// Python's ==, and <, which raises for types without an order.
bool equal(const Value& a, const Value& b);
bool less(const Value& a, const Value& b);
// Python's `needle in haystack`.
bool contains(const Value& haystack, const Value& needle);
// len(x), raising for types without one.
int64_t length(const Value& v);
// The items a for loop walks: a list's items, a dict's keys, a string's characters.
List iterate(const Value& v);

}  // namespace kite::tmpl
