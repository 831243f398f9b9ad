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

Expr repeat(Expr item, uint32_t min, uint32_t max) {
    Expr e;
    e.kind = Expr::Kind::Repeat;
    e.items.push_back(std::move(item));
    e.min = min;
    e.max = max;
    return e;
}

}  // namespace kite::grammar
