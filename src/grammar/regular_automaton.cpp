#include "grammar/regular_automaton.h"

#include <algorithm>
#include <bitset>
#include <map>
#include <unordered_set>

#include "grammar/utf8_ranges.h"

namespace kite::grammar {

namespace {

constexpr uint32_t kNoState = UINT32_MAX;
constexpr int32_t kRejected = ByteAutomaton::kRejected;

// Thrown inside this file only: the expression has a Ref, or its automaton is too large.
struct NotTaken {};

// Thompson's automaton: every state has empty moves and at most one byte move.
struct NfaState {
    std::vector<uint32_t> empty_moves;
    std::bitset<256> bytes;
    uint32_t to = kNoState;
};

struct Fragment {
    uint32_t in, out;
};

class NfaBuilder {
  public:
    explicit NfaBuilder(size_t max_states) : max_states_(max_states) {}

    std::vector<NfaState> states;

    Fragment build(const Expr& e) {
        switch (e.kind) {
            case Expr::Kind::Empty: {
                const uint32_t a = add();
                return {a, a};
            }
            case Expr::Kind::Literal: {
                const uint32_t in = add();
                uint32_t at = in;
                for (const unsigned char c : e.text) {
                    const uint32_t next = add();
                    move(at, std::bitset<256>().set(c), next);
                    at = next;
                }
                return {in, at};
            }
            case Expr::Kind::Class:
                return build_class(e.ranges);
            case Expr::Kind::Ref:
                throw NotTaken{};
            case Expr::Kind::Seq: {
                Fragment f = build(empty());
                for (const Expr& item : e.items) {
                    const Fragment g = build(item);
                    link(f.out, g.in);
                    f.out = g.out;
                }
                return f;
            }
            case Expr::Kind::Alt: {
                const Fragment f{add(), add()};
                for (const Expr& item : e.items) {
                    const Fragment g = build(item);
                    link(f.in, g.in);
                    link(g.out, f.out);
                }
                return f;
            }
            case Expr::Kind::Repeat:
                return build_repeat(e);
            case Expr::Kind::Regular:
                return build(e.items[0]);
        }
        throw NotTaken{};
    }

  private:
    uint32_t add() {
        if (states.size() >= max_states_) throw NotTaken{};
        states.emplace_back();
        return static_cast<uint32_t>(states.size() - 1);
    }
    void link(uint32_t from, uint32_t to) { states[from].empty_moves.push_back(to); }
    void move(uint32_t from, const std::bitset<256>& bytes, uint32_t to) {
        states[from].bytes = bytes;
        states[from].to = to;
    }

    // One path of byte moves per UTF-8 pattern of the code points.
    Fragment build_class(const std::vector<CodeRange>& ranges) {
        const Fragment f{add(), add()};
        for (const ByteSequence& seq : utf8_sequences(ranges)) {
            uint32_t at = add();
            link(f.in, at);
            for (size_t i = 0; i < seq.size(); ++i) {
                std::bitset<256> bytes;
                for (unsigned b = seq[i].lo; b <= seq[i].hi; ++b) bytes.set(b);
                const uint32_t next = i + 1 == seq.size() ? f.out : add();
                move(at, bytes, next);
                at = next;
            }
        }
        return f;
    }

    // min copies, then a loop or max - min copies each of which may end the repetition.
    Fragment build_repeat(const Expr& e) {
        const Expr& x = e.items[0];
        const uint32_t in = add();
        uint32_t at = in;
        for (uint32_t i = 0; i < e.min; ++i) {
            const Fragment g = build(x);
            link(at, g.in);
            at = g.out;
        }
        if (e.max == kUnbounded) {
            const uint32_t loop = add();
            link(at, loop);
            const Fragment g = build(x);
            link(loop, g.in);
            link(g.out, loop);
            return {in, loop};
        }
        const uint32_t out = add();
        for (uint32_t i = e.min; i < e.max; ++i) {
            const Fragment g = build(x);
            link(at, out);
            link(at, g.in);
            at = g.out;
        }
        link(at, out);
        return {in, out};
    }

    size_t max_states_;
};

using Subset = std::vector<uint32_t>;  // NFA states, sorted

// `seeds` and every state their empty moves reach.
Subset closure(const std::vector<NfaState>& nfa, Subset seeds, std::vector<uint32_t>& seen,
               uint32_t& stamp) {
    ++stamp;
    Subset out;
    while (!seeds.empty()) {
        const uint32_t s = seeds.back();
        seeds.pop_back();
        if (seen[s] == stamp) continue;
        seen[s] = stamp;
        out.push_back(s);
        for (const uint32_t t : nfa[s].empty_moves) seeds.push_back(t);
    }
    std::sort(out.begin(), out.end());
    return out;
}

// Bytes that every byte move takes alike, numbered: the subset construction follows one byte of
// each class (a JSON-escaped pattern's moves tell a few dozen classes apart, not 256).
struct ByteClasses {
    std::array<uint16_t, 256> of{};
    std::vector<uint8_t> first;  // a byte of each class
};

ByteClasses byte_classes(const std::vector<NfaState>& nfa) {
    std::unordered_set<std::bitset<256>> sets;
    for (const NfaState& s : nfa)
        if (s.to != kNoState) sets.insert(s.bytes);
    ByteClasses c;
    size_t classes = 1;
    std::vector<int32_t> split;
    for (const std::bitset<256>& set : sets) {
        // Each class splits into its bytes inside the set and those outside.
        split.assign(2 * classes, -1);
        size_t next = 0;
        for (size_t b = 0; b < 256; ++b) {
            int32_t& id = split[2 * c.of[b] + set.test(b)];
            if (id < 0) id = static_cast<int32_t>(next++);
            c.of[b] = static_cast<uint16_t>(id);
        }
        classes = next;
    }
    c.first.assign(classes, 0);
    for (size_t b = 256; b-- > 0;) c.first[c.of[b]] = static_cast<uint8_t>(b);
    return c;
}

// The subset construction: state 0 is the start. `budget` bounds its work (subset states times
// byte classes): a hostile pattern, (a|b)*a(a|b){20}, would need millions of states.
ByteAutomaton determinize(const std::vector<NfaState>& nfa, const Fragment& f, size_t max_states,
                          size_t budget) {
    const ByteClasses classes = byte_classes(nfa);
    ByteAutomaton dfa;
    std::vector<uint32_t> seen(nfa.size(), 0);
    uint32_t stamp = 0;
    std::map<Subset, int32_t> ids, by_targets;
    std::vector<Subset> subsets{closure(nfa, {f.in}, seen, stamp)};
    ids.emplace(subsets[0], 0);
    // Per NFA state with a byte move: the classes it moves on.
    std::vector<std::vector<uint16_t>> move_classes(nfa.size());
    for (size_t s = 0; s < nfa.size(); ++s)
        for (size_t c = 0; nfa[s].to != kNoState && c < classes.first.size(); ++c)
            if (nfa[s].bytes.test(classes.first[c])) move_classes[s].push_back(c);
    std::vector<int32_t> by_class(classes.first.size());
    std::vector<Subset> targets(classes.first.size());
    for (size_t i = 0; i < subsets.size(); ++i) {
        for (Subset& t : targets) t.clear();
        size_t work = subsets[i].size();
        for (const uint32_t s : subsets[i]) {
            for (const uint16_t c : move_classes[s]) targets[c].push_back(nfa[s].to);
            work += move_classes[s].size();
        }
        if (work > budget) throw NotTaken{};
        budget -= work;
        for (size_t c = 0; c < by_class.size(); ++c) {
            if (targets[c].empty()) {
                by_class[c] = kRejected;
                continue;
            }
            // Many states move to the same targets on most bytes (the .* around a searched
            // pattern): their closure is worked out once.
            if (const auto known = by_targets.find(targets[c]); known != by_targets.end()) {
                by_class[c] = known->second;
                continue;
            }
            const auto [it, added] = ids.emplace(closure(nfa, targets[c], seen, stamp),
                                                 static_cast<int32_t>(ids.size()));
            if (added) {
                if (subsets.size() >= max_states) throw NotTaken{};
                subsets.push_back(it->first);
            }
            by_targets.emplace(targets[c], it->second);
            by_class[c] = it->second;
        }
        std::array<int32_t, 256> row;
        for (size_t b = 0; b < 256; ++b) row[b] = by_class[classes.of[b]];
        dfa.next.push_back(row);
        dfa.accepting.push_back(std::binary_search(subsets[i].begin(), subsets[i].end(), f.out));
    }
    return dfa;
}

// Whether each state can reach an accepting one.
std::vector<uint8_t> live_states(const ByteAutomaton& dfa) {
    std::vector<uint8_t> live(dfa.accepting);
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t s = 0; s < dfa.states(); ++s) {
            if (live[s]) continue;
            for (const int32_t t : dfa.next[s])
                if (t != kRejected && live[t]) {
                    live[s] = 1;
                    changed = true;
                    break;
                }
        }
    }
    return live;
}

// Bytes every state moves alike on, as one column each: Moore's refinement compares states
// on a dozen columns rather than 256.
std::vector<size_t> distinct_columns(const ByteAutomaton& dfa) {
    std::map<std::vector<int32_t>, size_t> seen;
    std::vector<size_t> columns;
    std::vector<int32_t> column(dfa.states());
    for (size_t b = 0; b < 256; ++b) {
        for (size_t s = 0; s < dfa.states(); ++s) column[s] = dfa.next[s][b];
        if (seen.emplace(column, b).second) columns.push_back(b);
    }
    return columns;
}

// Moore's refinement over the live states: states stay together while they agree on accepting
// and, for every byte, on the class of the state it leads to. The classes are the minimal
// automaton's states, numbered in order of first appearance (the start's class is 0).
ByteAutomaton minimize(const ByteAutomaton& dfa, const std::vector<uint8_t>& live) {
    const size_t n = dfa.states();
    const std::vector<size_t> columns = distinct_columns(dfa);
    std::vector<int32_t> cls(n);
    for (size_t s = 0; s < n; ++s) cls[s] = live[s] ? dfa.accepting[s] : kRejected;
    for (size_t classes = 0;;) {
        std::map<std::vector<int32_t>, int32_t> ids;
        std::vector<int32_t> next_cls(n, kRejected);
        std::vector<int32_t> signature(columns.size() + 1);
        for (size_t s = 0; s < n; ++s) {
            if (!live[s]) continue;
            signature[0] = cls[s];
            for (size_t c = 0; c < columns.size(); ++c) {
                const int32_t t = dfa.next[s][columns[c]];
                signature[c + 1] = t == kRejected ? kRejected : cls[t];
            }
            next_cls[s] = ids.emplace(signature, static_cast<int32_t>(ids.size())).first->second;
        }
        cls = std::move(next_cls);
        if (ids.size() == classes) break;  // refining split nothing
        classes = ids.size();
    }
    ByteAutomaton out;
    out.next.assign(static_cast<size_t>(*std::max_element(cls.begin(), cls.end()) + 1), {});
    out.accepting.assign(out.next.size(), 0);
    for (size_t s = 0; s < n; ++s) {
        if (cls[s] == kRejected) continue;
        for (size_t b = 0; b < 256; ++b) {
            const int32_t t = dfa.next[s][b];
            out.next[cls[s]][b] = t == kRejected ? kRejected : cls[t];
        }
        out.accepting[cls[s]] = dfa.accepting[s];
    }
    return out;
}

}  // namespace

namespace {

// Unbounded loops in `e`, and whether any repeats more than one character class.
void count_loops(const Expr& e, size_t& loops, bool& complex_body) {
    if (e.kind == Expr::Kind::Repeat && e.max == kUnbounded) {
        ++loops;
        if (e.items[0].kind != Expr::Kind::Class) complex_body = true;
    }
    for (const Expr& item : e.items) count_loops(item, loops, complex_body);
}

}  // namespace

bool may_split_many_ways(const Expr& e) {
    size_t loops = 0;
    bool complex_body = false;
    count_loops(e, loops, complex_body);
    return loops >= 2 || complex_body;
}

std::optional<ByteAutomaton> regular_automaton(const Expr& e, size_t max_states) {
    try {
        // Thompson's automaton takes a few states per byte pattern; far more than the
        // deterministic one may take means a counted repetition too large to be worth it.
        NfaBuilder nfa(16 * max_states);
        const Fragment f = nfa.build(e);
        const ByteAutomaton dfa = determinize(nfa.states, f, max_states, 1024 * max_states);
        const std::vector<uint8_t> live = live_states(dfa);
        if (!live[0]) return std::nullopt;
        return minimize(dfa, live);
    } catch (const NotTaken&) {
        return std::nullopt;
    }
}

}  // namespace kite::grammar
