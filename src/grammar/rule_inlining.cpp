#include "grammar/rule_inlining.h"

#include <algorithm>

namespace kite::grammar {

namespace {

void collect_refs(const Expr& e, std::vector<const std::string*>& out) {
    if (e.kind == Expr::Kind::Ref) out.push_back(&e.text);
    for (const Expr& item : e.items) collect_refs(item, out);
}

}  // namespace

bool refers(const Expr& e) {
    if (e.kind == Expr::Kind::Ref) return true;
    for (const Expr& item : e.items)
        if (refers(item)) return true;
    return false;
}

RuleInliner::RuleInliner(const std::map<std::string, Expr>& rules) : rules_(rules) {
    measure_all();
}

// Every rule measured after the rules it refers to, by a depth-first walk with its own stack
// (a chain of thousands of rules must not exhaust the thread's). A reference to a rule still
// open on the walk closes a cycle: the rule that makes it cannot be written out, nor can the
// open rules between (each reaches it), which measure() finds through its size.
void RuleInliner::measure_all() {
    enum class Mark : uint8_t { Open, Done };
    std::map<std::string_view, Mark> marks;
    struct Frame {
        const std::string* name;
        std::vector<const std::string*> refs;
        size_t next = 0;
        bool cyclic = false;
    };
    std::vector<Frame> stack;
    const auto open = [&](const std::string& name, const Expr& body) {
        marks[name] = Mark::Open;
        stack.push_back({&name, {}});
        collect_refs(body, stack.back().refs);
    };
    for (const auto& [root, body] : rules_) {
        if (marks.contains(root)) continue;
        open(root, body);
        while (!stack.empty()) {
            Frame& f = stack.back();
            if (f.next < f.refs.size()) {
                const std::string& child = *f.refs[f.next++];
                const auto mark = marks.find(child);
                if (mark != marks.end()) {
                    f.cyclic |= mark->second == Mark::Open;
                } else if (const auto rule = rules_.find(child); rule != rules_.end()) {
                    open(rule->first, rule->second);  // f is not used past this
                }
                continue;
            }
            sizes_[*f.name] = f.cyclic ? Size{} : measure(rules_.at(*f.name));
            marks[*f.name] = Mark::Done;
            stack.pop_back();
        }
    }
}

// A Ref counts as the body it stands for; a rule not measured (undefined, or on a cycle) is
// not ok.
RuleInliner::Size RuleInliner::measure(const Expr& e) const {
    if (e.kind == Expr::Kind::Ref) {
        const auto it = sizes_.find(e.text);
        return it == sizes_.end() ? Size{} : it->second;
    }
    Size s{true, 1, 1};
    for (const Expr& item : e.items) {
        const Size part = measure(item);
        if (!part.ok) return {};
        s.nodes += part.nodes;
        s.depth = std::max(s.depth, part.depth + 1);
        if (s.nodes > kMaxNodes || s.depth > kMaxDepth) return {};
    }
    return s;
}

Expr RuleInliner::write_out(const Expr& e) const {
    if (e.kind == Expr::Kind::Ref) return write_out(rules_.at(e.text));
    Expr out;
    out.kind = e.kind;
    out.text = e.text;
    out.ranges = e.ranges;
    out.min = e.min;
    out.max = e.max;
    out.items.reserve(e.items.size());
    for (const Expr& item : e.items) out.items.push_back(write_out(item));
    return out;
}

std::optional<Expr> RuleInliner::inlined(const std::string& name) {
    const auto it = sizes_.find(name);
    if (it == sizes_.end() || !it->second.ok || it->second.nodes > budget_) return std::nullopt;
    budget_ -= it->second.nodes;
    return write_out(rules_.at(name));
}

}  // namespace kite::grammar
