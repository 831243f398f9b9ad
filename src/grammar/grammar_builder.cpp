#include "grammar/grammar.h"

#include <fmt/format.h>

#include <algorithm>

#include "grammar/regular_automaton.h"
#include "grammar/shortest_length.h"
#include "grammar/utf8_ranges.h"

namespace kite::grammar {

namespace {

// Elements in all productions, which bound compile time and memory: a schema asking for
// maxLength 10^6 is refused, not expanded.
constexpr size_t kMaxElements = 1'000'000;

// A Regular part's automaton at most: beyond it (long counted repetitions) the part is lowered
// as written, where Leo's shortcut keeps nested optionals cheap. And all of a grammar's
// automata at most, counting a part given up on as a whole one: a schema of a thousand
// patterns each near the limit (about 20 ms each) would otherwise compile for seconds.
constexpr size_t kMaxAutomatonStates = 512;
constexpr size_t kMaxAutomatonStatesPerGrammar = 8 * kMaxAutomatonStates;

}  // namespace

uint32_t GrammarBuilder::rule_id(const std::string& name) {
    auto [it, added] = ids_.emplace(name, static_cast<uint32_t>(rules_.size()));
    if (added) {
        rules_.emplace_back();
        g_.names.push_back(name);
        has_definition_.push_back(0);
    }
    return it->second;
}

uint32_t GrammarBuilder::new_helper(const std::string& base) {
    const uint32_t id = rule_id(fmt::format("{}#{}", base, rules_.size()));
    has_definition_[id] = 1;
    return id;
}

bool GrammarBuilder::defined(const std::string& name) const {
    auto it = ids_.find(name);
    return it != ids_.end() && has_definition_[it->second];
}

void GrammarBuilder::define(const std::string& name, Expr expr) {
    const uint32_t id = rule_id(name);
    has_definition_[id] = 1;
    if (expr.kind == Expr::Kind::Alt) {
        for (const Expr& item : expr.items) {
            std::vector<Element> seq;
            lower(item, seq);
            add_production(id, seq);
        }
        return;
    }
    std::vector<Element> seq;
    lower(expr, seq);
    add_production(id, seq);
}

void GrammarBuilder::add_production(uint32_t rule, const std::vector<Element>& seq) {
    size_ += seq.size() + 1;
    if (size_ > kMaxElements) throw GrammarError("the grammar is too large (counted repetitions)");
    rules_[rule].push_back(seq);
}

uint32_t GrammarBuilder::byte_set(const std::bitset<256>& set) {
    // Keyed by the set's four words, taken by shifts (a test() per bit made this a third of
    // compile time), in a hash map.
    static const std::bitset<256> kLowWord(~0ULL);
    std::array<uint64_t, 4> key{};
    for (size_t w = 0; w < 4; ++w) key[w] = ((set >> (64 * w)) & kLowWord).to_ullong();
    auto [it, added] = byte_set_ids_.emplace(key, static_cast<uint32_t>(g_.byte_sets.size()));
    if (added) g_.byte_sets.push_back(set);
    return it->second;
}

void GrammarBuilder::lower(const Expr& e, std::vector<Element>& out) {
    switch (e.kind) {
        case Expr::Kind::Empty:
            return;
        case Expr::Kind::Literal:
            for (unsigned char c : e.text) {
                std::bitset<256> set;
                set.set(c);
                out.push_back({Element::Kind::Bytes, byte_set(set)});
            }
            return;
        case Expr::Kind::Class:
            lower_class(e, out);
            return;
        case Expr::Kind::Ref:
            out.push_back({Element::Kind::Rule, rule_id(e.text)});
            return;
        case Expr::Kind::Seq:
            for (const Expr& item : e.items) lower(item, out);
            return;
        case Expr::Kind::Alt: {
            const uint32_t id = new_helper("alt");
            for (const Expr& item : e.items) {
                std::vector<Element> seq;
                lower(item, seq);
                add_production(id, seq);
            }
            out.push_back({Element::Kind::Rule, id});
            return;
        }
        case Expr::Kind::Repeat:
            lower_repeat(e, out);
            return;
        case Expr::Kind::Regular:
            lower_regular(e, out);
            return;
    }
}

// One byte set when every code point is ASCII; else a helper rule with one production per
// UTF-8 byte pattern.
void GrammarBuilder::lower_class(const Expr& e, std::vector<Element>& out) {
    const std::vector<ByteSequence> seqs = utf8_sequences(e.ranges);
    std::bitset<256> single;
    bool all_single = true;
    for (const ByteSequence& s : seqs) {
        if (s.size() != 1)
            all_single = false;
        else
            for (unsigned b = s[0].lo; b <= s[0].hi; ++b) single.set(b);
    }
    if (all_single && !seqs.empty()) {
        out.push_back({Element::Kind::Bytes, byte_set(single)});
        return;
    }
    const uint32_t id = new_helper("class");
    if (single.any()) add_production(id, {{Element::Kind::Bytes, byte_set(single)}});
    for (const ByteSequence& s : seqs) {
        if (s.size() == 1) continue;
        std::vector<Element> production;
        for (const ByteRange& r : s) {
            std::bitset<256> set;
            for (unsigned b = r.lo; b <= r.hi; ++b) set.set(b);
            production.push_back({Element::Kind::Bytes, byte_set(set)});
        }
        add_production(id, production);
    }
    out.push_back({Element::Kind::Rule, id});
}

// The part as one element: itself when it lowers to one, else a helper rule.
Element GrammarBuilder::as_element(const Expr& e) {
    std::vector<Element> seq;
    lower(e, seq);
    if (seq.size() == 1) return seq[0];
    const uint32_t id = new_helper("part");
    add_production(id, seq);
    return {Element::Kind::Rule, id};
}

// x{m,n}: m copies of x, then either a left-recursive star (x*: S ::= S x | empty, which an
// Earley recognizer runs in constant work per item) or a chain of n-m nested optionals.
void GrammarBuilder::lower_repeat(const Expr& e, std::vector<Element>& out) {
    if (e.max != kUnbounded && e.min > e.max)
        throw GrammarError(fmt::format("repetition {{{},{}}} has min above max", e.min, e.max));
    if (e.max == 0) return;
    const Element x = as_element(e.items[0]);
    if (size_ + e.min > kMaxElements)
        throw GrammarError("the grammar is too large (counted repetitions)");
    for (uint32_t i = 0; i < e.min; ++i) out.push_back(x);
    if (e.max == kUnbounded) {
        const uint32_t star = new_helper("star");
        add_production(star, {{Element::Kind::Rule, star}, x});
        add_production(star, {});
        out.push_back({Element::Kind::Rule, star});
        return;
    }
    if (e.max == e.min) return;
    if (e.max - e.min > kMaxElements)
        throw GrammarError("the grammar is too large (counted repetitions)");
    uint32_t tail = UINT32_MAX;
    for (uint32_t i = e.min; i < e.max; ++i) {
        const uint32_t optional = new_helper("opt");
        add_production(optional, {});
        if (tail == UINT32_MAX)
            add_production(optional, {x});
        else
            add_production(optional, {x, {Element::Kind::Rule, tail}});
        tail = optional;
    }
    out.push_back({Element::Kind::Rule, tail});
}

// A Regular part as its automaton, one rule per state written left-recursively: "t ::= s b"
// for each move from s to t on the bytes b, the start also empty. Every state's rule then
// begins where the part began, so the matcher's open items stand for the one state the text
// has reached, a fixed number of them however long the text (Leo's shortcut is not needed),
// and a state met again is the same parse state (masks are cached by it). A part that cannot
// split text many ways, or that the automaton does not take (a Ref inside, too many states),
// is lowered as written (its last item).
void GrammarBuilder::lower_regular(const Expr& e, std::vector<Element>& out) {
    const size_t max_states =
        std::min(kMaxAutomatonStates, kMaxAutomatonStatesPerGrammar - automaton_states_);
    std::optional<ByteAutomaton> dfa;
    if (max_states > 0 && may_split_many_ways(e.items[0])) {
        dfa = regular_automaton(e.items[0], max_states);
        automaton_states_ += dfa ? dfa->states() : max_states;
    }
    if (!dfa) {
        lower(e.items.back(), out);
        return;
    }
    std::vector<uint32_t> state(dfa->states());
    for (uint32_t& id : state) id = new_helper("state");
    add_production(state[0], {});
    for (size_t s = 0; s < dfa->states(); ++s) {
        std::map<int32_t, std::bitset<256>> moves;
        for (size_t b = 0; b < 256; ++b)
            if (const int32_t t = dfa->next[s][b]; t != ByteAutomaton::kRejected) moves[t].set(b);
        for (const auto& [t, bytes] : moves)
            add_production(state[t], {{Element::Kind::Rule, state[s]},
                                      {Element::Kind::Bytes, byte_set(bytes)}});
    }
    const uint32_t id = new_helper("regular");
    for (size_t s = 0; s < dfa->states(); ++s)
        if (dfa->accepting[s]) add_production(id, {{Element::Kind::Rule, state[s]}});
    out.push_back({Element::Kind::Rule, id});
}

std::shared_ptr<const Grammar> GrammarBuilder::build(const std::string& root) {
    for (size_t r = 0; r < rules_.size(); ++r)
        if (!has_definition_[r])
            throw GrammarError(fmt::format("rule '{}' is used but not defined", g_.names[r]));
    if (!defined(root)) throw GrammarError(fmt::format("no rule '{}'", root));
    g_.root = ids_.at(root);
    finish();
    return std::make_shared<const Grammar>(std::move(g_));
}

namespace {

bool all_of_rules(const std::vector<Element>& seq, const std::vector<uint8_t>& ok) {
    for (const Element& e : seq)
        if (e.kind == Element::Kind::Rule && !ok[e.id]) return false;
    return true;
}

bool has_bytes(const std::vector<Element>& seq) {
    for (const Element& e : seq)
        if (e.kind == Element::Kind::Bytes) return true;
    return false;
}

// Rules that hold: a rule holds when one of its eligible productions has only rules that hold.
// A worklist with a count of pending rules per production, linear in the grammar's size:
// sweeping all rules until nothing changes is quadratic on the long chains of helper rules
// that counted repetitions lower to.
template <typename Eligible>
std::vector<uint8_t> fixpoint(const std::vector<std::vector<std::vector<Element>>>& rules,
                              Eligible eligible) {
    struct Production {
        uint32_t rule;
        uint32_t pending;
    };
    std::vector<Production> productions;
    std::vector<std::vector<uint32_t>> waiting(rules.size());  // rule -> productions using it
    std::vector<uint8_t> holds(rules.size(), 0);
    std::vector<uint32_t> work;
    for (size_t r = 0; r < rules.size(); ++r)
        for (const auto& seq : rules[r]) {
            if (!eligible(seq)) continue;
            const auto p = static_cast<uint32_t>(productions.size());
            productions.push_back({static_cast<uint32_t>(r), 0});
            for (const Element& e : seq)
                if (e.kind == Element::Kind::Rule) {
                    ++productions[p].pending;
                    waiting[e.id].push_back(p);
                }
            if (productions[p].pending == 0 && !holds[r]) {
                holds[r] = 1;
                work.push_back(static_cast<uint32_t>(r));
            }
        }
    while (!work.empty()) {
        const uint32_t r = work.back();
        work.pop_back();
        for (uint32_t p : waiting[r]) {
            Production& prod = productions[p];
            if (--prod.pending == 0 && !holds[prod.rule]) {
                holds[prod.rule] = 1;
                work.push_back(prod.rule);
            }
        }
    }
    return holds;
}

}  // namespace

// Drops productions that can never finish (they use a rule that matches nothing), so every
// state the matcher reaches can still be completed: a constraint never leads the model into
// a dead end. Then flattens the productions and works out which rules are nullable.
void GrammarBuilder::finish() {
    const auto productive = fixpoint(rules_, [](const auto&) { return true; });
    if (!productive[g_.root])
        throw GrammarError(
            fmt::format("rule '{}' matches nothing (empty language)", g_.names[g_.root]));
    for (auto& productions : rules_)
        std::erase_if(productions, [&](const auto& seq) { return !all_of_rules(seq, productive); });
    g_.nullable = fixpoint(rules_, [](const auto& seq) { return !has_bytes(seq); });
    g_.productions.assign(rules_.size(), {});
    for (size_t r = 0; r < rules_.size(); ++r) {
        for (const auto& seq : rules_[r]) {
            g_.productions[r].push_back(static_cast<uint32_t>(g_.elements.size()));
            g_.elements.insert(g_.elements.end(), seq.begin(), seq.end());
            g_.elements.push_back({Element::Kind::End, static_cast<uint32_t>(r)});
        }
    }
    rules_.clear();
    add_rest_lengths(g_);
}

}  // namespace kite::grammar
