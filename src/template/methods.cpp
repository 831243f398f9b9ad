#include "template/methods.h"

#include <set>

#include "template/method_table.h"

namespace kite::tmpl {

namespace {

// What Jinja2's immutable sandbox refuses: methods that change a list or dict in place.
const std::set<std::string, std::less<>> kListMutators{"append", "extend", "insert", "pop",
                                                       "remove", "clear",  "sort",   "reverse"};
const std::set<std::string, std::less<>> kDictMutators{"update", "pop", "popitem", "setdefault",
                                                       "clear"};

Value bind(const Value& self, const std::string& name, Method impl) {
    auto f = std::make_shared<Function>();
    f->name = name;
    f->call = [self, impl](CallArgs& a, Renderer& r) { return impl(self, a, r); };
    return Value(f);
}

std::optional<Value> bound(const MethodTable& table, const Value& self, const std::string& name) {
    const auto found = table.find(name);
    if (found == table.end()) return std::nullopt;
    return bind(self, name, found->second);
}

Value refused(const std::string& name, const char* type) {
    return Value(Undefined{"SecurityError: access to attribute '" + name + "' of '" + type +
                           "' object is unsafe."});
}

}  // namespace

std::optional<Value> method(const Value& object, const std::string& name) {
    if (object.is_string()) return bound(str_methods(), object, name);
    if (object.is_dict() && !object.dict().is_namespace) {
        if (kDictMutators.count(name)) return refused(name, "dict");
        return bound(dict_methods(), object, name);
    }
    if (object.is_tuple()) {
        if (name == "copy") return std::nullopt;  // tuples have no copy()
        return bound(list_methods(), object, name);
    }
    if (object.is_list() && !object.is_generator()) {
        if (kListMutators.count(name)) return refused(name, "list");
        return bound(list_methods(), object, name);
    }
    return std::nullopt;
}

}  // namespace kite::tmpl
