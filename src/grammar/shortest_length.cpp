#include "grammar/shortest_length.h"

#include <functional>
#include <queue>
#include <utility>
#include <vector>

namespace kite::grammar {

namespace {

// The fewest bytes each rule matches: Knuth's generalisation of Dijkstra's algorithm to
// grammars. A production's length is known once all its rules are settled; the shortest
// pending production settles its rule, smallest first, so each rule is settled once.
std::vector<uint64_t> rule_lengths(const Grammar& g) {
    struct Production {
        uint32_t rule;
        uint32_t pending;  // rule occurrences not settled yet
        uint64_t length;   // its bytes and its settled rules' lengths so far
    };
    const size_t n_rules = g.productions.size();
    std::vector<Production> productions;
    std::vector<std::vector<uint32_t>> users(n_rules);  // rule -> productions, per occurrence
    for (uint32_t r = 0; r < n_rules; ++r)
        for (uint32_t start : g.productions[r]) {
            const auto p = static_cast<uint32_t>(productions.size());
            Production prod{r, 0, 0};
            for (uint32_t pos = start; g.elements[pos].kind != Element::Kind::End; ++pos) {
                if (g.elements[pos].kind == Element::Kind::Bytes) {
                    ++prod.length;
                } else {
                    ++prod.pending;
                    users[g.elements[pos].id].push_back(p);
                }
            }
            productions.push_back(prod);
        }
    using Entry = std::pair<uint64_t, uint32_t>;  // (length, rule)
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
    std::vector<uint64_t> best(n_rules, kLongest);
    std::vector<uint8_t> settled(n_rules, 0);
    auto offer = [&](const Production& p) {
        if (!settled[p.rule] && p.length < best[p.rule]) {
            best[p.rule] = p.length;
            queue.push({p.length, p.rule});
        }
    };
    for (const Production& p : productions)
        if (p.pending == 0) offer(p);
    while (!queue.empty()) {
        const auto [length, r] = queue.top();
        queue.pop();
        if (settled[r]) continue;
        settled[r] = 1;
        for (uint32_t p : users[r]) {
            productions[p].length = add_lengths(productions[p].length, length);
            if (--productions[p].pending == 0) offer(productions[p]);
        }
    }
    return best;
}

}  // namespace

void add_rest_lengths(Grammar& g) {
    const std::vector<uint64_t> rule_length = rule_lengths(g);
    g.rest_length.assign(g.elements.size(), 0);
    g.rule_of.assign(g.elements.size(), 0);
    for (const std::vector<uint32_t>& starts : g.productions)
        for (uint32_t start : starts) {
            uint32_t end = start;
            while (g.elements[end].kind != Element::Kind::End) ++end;
            uint64_t rest = 0;
            for (uint32_t pos = end + 1; pos-- > start;) {
                const Element& e = g.elements[pos];
                if (e.kind == Element::Kind::Bytes) rest = add_lengths(rest, 1);
                if (e.kind == Element::Kind::Rule) rest = add_lengths(rest, rule_length[e.id]);
                g.rest_length[pos] = rest;
                g.rule_of[pos] = g.elements[end].id;
            }
        }
}

}  // namespace kite::grammar
