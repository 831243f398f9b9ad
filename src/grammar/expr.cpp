#include "grammar/expr.h"

#include <algorithm>

namespace kite::grammar {

std::vector<CodeRange> normalize_ranges(std::vector<CodeRange> ranges, bool negated) {
    std::sort(ranges.begin(), ranges.end(),
              [](const CodeRange& a, const CodeRange& b) { return a.lo < b.lo; });
    std::vector<CodeRange> merged;
    for (const CodeRange& r : ranges) {
        if (r.lo > r.hi) continue;
        if (!merged.empty() && r.lo <= merged.back().hi + 1)
            merged.back().hi = std::max(merged.back().hi, r.hi);
        else
            merged.push_back(r);
    }
    if (!negated) return merged;
    std::vector<CodeRange> complement;
    uint32_t next = 0;
    for (const CodeRange& r : merged) {
        if (r.lo > next) complement.push_back({next, r.lo - 1});
        next = r.hi + 1;
    }
    if (next <= kMaxCodePoint) complement.push_back({next, kMaxCodePoint});
    return complement;
}

Expr char_class(std::vector<CodeRange> ranges, bool negated) {
    Expr e;
    e.kind = Expr::Kind::Class;
    e.ranges = normalize_ranges(std::move(ranges), negated);
    return e;
}

Expr seq(std::vector<Expr> items) {
    if (items.size() == 1) return std::move(items[0]);
    Expr e;
    e.kind = Expr::Kind::Seq;
    e.items = std::move(items);
    return e;
}

Expr alt(std::vector<Expr> items) {
    if (items.size() == 1) return std::move(items[0]);
    Expr e;
    e.kind = Expr::Kind::Alt;
    e.items = std::move(items);
    return e;
}

namespace {

// An unbounded loop (at most one pass required) whose alternatives are themselves repeated,
// (a+|b)+ or (x*)+, matches the same strings as the loop over the alternatives' bodies,
// (a|b)+ or x*: the loop repeats them anyway. The nested form is ambiguous (a run of a's
// splits into passes in every way), and the matcher's open items then grow with every byte
// fed (each byte cost time in proportion to the text before it), so it is built flat.
Expr flat_loop(Expr item, uint32_t min) {
    std::vector<Expr> terms;
    if (item.kind == Expr::Kind::Alt)
        terms = std::move(item.items);
    else
        terms.push_back(std::move(item));
    std::vector<Expr> bodies;
    for (Expr& t : terms) {
        if (t.kind == Expr::Kind::Empty) {
            min = 0;  // an empty pass: the loop may match nothing
            continue;
        }
        if (t.kind == Expr::Kind::Repeat && t.min <= 1 && t.max >= 1) {
            if (t.min == 0) min = 0;
            bodies.push_back(std::move(t.items[0]));
            continue;
        }
        bodies.push_back(std::move(t));
    }
    if (bodies.empty()) return empty();
    Expr e;
    e.kind = Expr::Kind::Repeat;
    e.items.push_back(alt(std::move(bodies)));
    e.min = min;
    e.max = kUnbounded;
    return e;
}

}  // namespace

Expr repeat(Expr item, uint32_t min, uint32_t max) {
    if (max == kUnbounded && min <= 1) return flat_loop(std::move(item), min);
    Expr e;
    e.kind = Expr::Kind::Repeat;
    e.items.push_back(std::move(item));
    e.min = min;
    e.max = max;
    return e;
}

}  // namespace kite::grammar
