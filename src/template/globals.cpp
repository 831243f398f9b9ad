#include "template/globals.h"

#include <ctime>

#include "template/call_args.h"
#include "template/error.h"

namespace kite::tmpl {

namespace {

Value function(std::string name, std::function<Value(CallArgs&, Renderer&)> fn) {
    auto f = std::make_shared<Function>();
    f->name = std::move(name);
    f->call = std::move(fn);
    return Value(f);
}

Value range(CallArgs& args, Renderer& r) {
    std::vector<int64_t> n;
    for (const Value& v : args.positional) {
        if (!v.is_int() && !v.is_bool()) template_fail("TypeError: range() takes integers");
        n.push_back(v.as_int());
    }
    if (n.empty() || n.size() > 3) template_fail("TypeError: range expected 1 to 3 arguments");
    const int64_t start = n.size() > 1 ? n[0] : 0, stop = n.size() > 1 ? n[1] : n[0];
    const int64_t step = n.size() > 2 ? n[2] : 1;
    if (step == 0) template_fail("ValueError: range() arg 3 must not be zero");
    List out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        r.count_iteration();
        out.emplace_back(i);
    }
    return Value(std::move(out));
}

// dict(pairs) takes any iterable of two-item sequences, as Python's dict() does.
void add_pairs(Dict& d, const Value& pairs) {
    size_t index = 0;
    for (const Value& pair : iterate(pairs)) {
        const List items = iterate(pair);
        if (items.size() != 2)
            template_fail(
                "ValueError: dictionary update sequence element #{} has length {}; 2 is required",
                index, items.size());
        d.set(items[0], items[1]);
        ++index;
    }
}

// dict(**kwargs) and namespace(**kwargs), also from a mapping or pairs given first.
Dict keyword_dict(const CallArgs& args) {
    Dict d;
    for (const Value& v : args.positional) {
        if (v.is_dict())
            for (const auto& [key, item] : v.dict().items) d.set(key, item);
        else
            add_pairs(d, v);
    }
    for (const auto& [key, item] : args.keyword) d.set(key, item);
    return d;
}

Value strftime_now(CallArgs& args, Renderer& r) {
    const std::string format = string_arg(args, 0, "format", "strftime_now");
    std::tm tm{};
    if (const auto& fixed = r.options().now) {
        gmtime_r(&*fixed, &tm);
    } else {
        const std::time_t now = std::time(nullptr);
        localtime_r(&now, &tm);
    }
    if (format.size() > 256) template_fail("strftime_now: format too long");
    char buf[1024];
    const size_t n = std::strftime(buf, sizeof buf, format.c_str(), &tm);
    return Value(std::string(buf, n));
}

}  // namespace

void add_globals(Dict& root) {
    root.set("range", function("range", range));
    root.set("dict",
             function("dict", [](CallArgs& a, Renderer&) { return Value(keyword_dict(a)); }));
    root.set("namespace", function("namespace", [](CallArgs& a, Renderer&) {
                 Dict d = keyword_dict(a);
                 d.is_namespace = true;
                 return Value(std::move(d));
             }));
    root.set("raise_exception", function("raise_exception", [](CallArgs& a, Renderer&) -> Value {
                 template_fail("TemplateError: {}", to_str(arg(a, 0, "message")));
             }));
    root.set("strftime_now", function("strftime_now", strftime_now));
}

}  // namespace kite::tmpl
