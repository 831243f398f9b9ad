#include "grammar/matcher.h"

#include <algorithm>
#include <array>

#include "grammar/byte_runs.h"
#include "grammar/token_trie.h"

namespace kite::grammar {

namespace {

uint64_t key_of(uint32_t pos, uint32_t origin) {
    return (static_cast<uint64_t>(pos) << 32) | origin;
}

uint8_t lowest(const std::bitset<256>& set) {
    size_t b = 0;
    while (b < 255 && !set.test(b)) ++b;
    return static_cast<uint8_t>(b);
}

// A run of fewer bytes (hex digits) ends almost every token after its first byte: the run
// index would be the whole vocabulary again, and the grouped walk is cheaper.
constexpr size_t kMinRunBytes = 32;

uint64_t hash_of(uint64_t key) {
    key ^= key >> 29;
    key *= 0xbf58476d1ce4e5b9ULL;
    return key ^ (key >> 32);
}

}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> grammar) : g_(std::move(grammar)) {
    set_start_.push_back(0);
    reset_dedup(64);
    for (uint32_t p : g_->productions[g_->root]) add({p, 0});
    close_set(0);
}

void Matcher::reset_dedup(size_t expected) {
    size_t size = 64;
    while (size < expected * 2) size *= 2;
    if (dedup_keys_.size() < size) {
        dedup_keys_.assign(size, 0);
        dedup_gen_.assign(size, 0);
        gen_ = 0;
    }
    ++gen_;
    dedup_count_ = 0;
}

// Adds the item to the newest set unless it is there already.
void Matcher::add(Item item) {
    if ((dedup_count_ + 1) * 2 > dedup_keys_.size()) {
        // Grow: rebuild the table from the newest set's items.
        const uint32_t start = set_start_.back();
        dedup_keys_.assign(dedup_keys_.size() * 2, 0);
        dedup_gen_.assign(dedup_keys_.size(), 0);
        gen_ = 1;
        dedup_count_ = 0;
        const size_t mask = dedup_keys_.size() - 1;
        for (size_t i = start; i < items_.size(); ++i) {
            const uint64_t k = key_of(items_[i].pos, items_[i].origin);
            size_t h = hash_of(k) & mask;
            while (dedup_gen_[h] == gen_) h = (h + 1) & mask;
            dedup_gen_[h] = gen_;
            dedup_keys_[h] = k;
            ++dedup_count_;
        }
    }
    const uint64_t k = key_of(item.pos, item.origin);
    const size_t mask = dedup_keys_.size() - 1;
    size_t h = hash_of(k) & mask;
    while (dedup_gen_[h] == gen_) {
        if (dedup_keys_[h] == k) return;
        h = (h + 1) & mask;
    }
    dedup_gen_[h] = gen_;
    dedup_keys_[h] = k;
    ++dedup_count_;
    items_.push_back(item);
}

// Predicts and completes until the newest set (k) is closed. A nullable rule is stepped over
// as it is predicted (Aycock and Horspool), so completions of empty rules are never missed.
void Matcher::close_set(uint32_t k) {
    const Grammar& g = *g_;
    for (size_t i = set_start_[k]; i < items_.size(); ++i) {
        const Item item = items_[i];
        const Element& e = g.elements[item.pos];
        if (e.kind == Element::Kind::Rule) {
            for (uint32_t p : g.productions[e.id]) add({p, k});
            if (g.nullable[e.id]) add({item.pos + 1, item.origin});
        } else if (e.kind == Element::Kind::End) {
            if (item.origin < k) {
                const Item top = leo_top(item.origin, e.id);
                if (top.pos != kNoItem) {
                    add(top);
                    continue;
                }
            }
            const uint32_t end = item.origin == k ? static_cast<uint32_t>(items_.size())
                                                  : set_start_[item.origin + 1];
            for (uint32_t j = set_start_[item.origin]; j < end; ++j) {
                const Element& waiting = g.elements[items_[j].pos];
                if (waiting.kind == Element::Kind::Rule && waiting.id == e.id)
                    add({items_[j].pos + 1, items_[j].origin});
            }
        }
    }
}

// Leo's optimisation of right recursion: when set `set` holds exactly one item waiting for
// `rule` and `rule` ends its production (B ::= beta . rule), completing `rule` from there
// completes B too, and so on down a chain of such sets. Only the chain's topmost completed item
// is added, so a counted repetition (right-nested optionals) costs constant work per byte
// instead of one completion per byte already matched. The completed items left out are never
// looked at again: only items waiting for a rule are. Memoised per set.
Matcher::Item Matcher::leo_top(uint32_t set, uint32_t rule) {
    const Grammar& g = *g_;
    leo_chain_.clear();
    Item top{kNoItem, 0};
    for (;;) {
        if (const Item* memo = leo_find(set, rule)) {
            if (memo->pos != kNoItem) top = *memo;
            break;
        }
        Item waiter{kNoItem, 0};
        size_t waiting = 0;
        for (uint32_t j = set_start_[set]; j < set_start_[set + 1] && waiting < 2; ++j) {
            const Element& e = g.elements[items_[j].pos];
            if (e.kind == Element::Kind::Rule && e.id == rule) {
                waiter = items_[j];
                ++waiting;
            }
        }
        if (waiting != 1 || g.elements[waiter.pos + 1].kind != Element::Kind::End) {
            leo_.resize(std::max<size_t>(leo_.size(), set + 1));
            leo_[set].push_back({rule, {kNoItem, 0}});
            break;
        }
        leo_chain_.push_back({set, rule});
        top = {waiter.pos + 1, waiter.origin};
        if (waiter.origin >= set) break;  // B began in this set: the chain ends here
        rule = g.elements[waiter.pos + 1].id;
        set = waiter.origin;
    }
    for (const auto& [s, r] : leo_chain_) {
        leo_.resize(std::max<size_t>(leo_.size(), s + 1));
        leo_[s].push_back({r, top});
    }
    return top;
}

const Matcher::Item* Matcher::leo_find(uint32_t set, uint32_t rule) const {
    if (set >= leo_.size()) return nullptr;
    for (const LeoEntry& entry : leo_[set])
        if (entry.rule == rule) return &entry.top;
    return nullptr;
}

bool Matcher::push_byte(uint8_t b) {
    const Grammar& g = *g_;
    const auto k = static_cast<uint32_t>(set_start_.size());
    const uint32_t prev_begin = set_start_.back();
    const auto prev_end = static_cast<uint32_t>(items_.size());
    set_start_.push_back(prev_end);
    reset_dedup(prev_end - prev_begin);
    for (uint32_t i = prev_begin; i < prev_end; ++i) {
        const Element& e = g.elements[items_[i].pos];
        if (e.kind == Element::Kind::Bytes && g.byte_sets[e.id].test(b))
            add({items_[i].pos + 1, items_[i].origin});
    }
    if (items_.size() == prev_end) {
        set_start_.pop_back();
        return false;
    }
    close_set(k);
    return true;
}

void Matcher::pop_set() {
    if (set_start_.size() <= after_known_.size()) after_known_[set_start_.size() - 1] = 0;
    items_.resize(set_start_.back());
    if (set_start_.size() <= leo_.size()) leo_[set_start_.size() - 1].clear();
    set_start_.pop_back();
    if (set_hash_.size() > set_start_.size()) set_hash_.resize(set_start_.size());
}

bool Matcher::accepts(std::string_view bytes) {
    const size_t before = set_start_.size();
    bool ok = true;
    for (char c : bytes)
        if (!(ok = push_byte(static_cast<uint8_t>(c)))) break;
    while (set_start_.size() > before) pop_set();
    return ok;
}

bool Matcher::advance(std::string_view token_bytes) {
    const auto before = static_cast<uint32_t>(set_start_.size());
    for (char c : token_bytes) {
        if (push_byte(static_cast<uint8_t>(c))) continue;
        while (set_start_.size() > before) pop_set();
        return false;
    }
    token_sets_.push_back(before);
    return true;
}

bool Matcher::can_stop() const {
    const Grammar& g = *g_;
    for (size_t i = set_start_.back(); i < items_.size(); ++i) {
        const Element& e = g.elements[items_[i].pos];
        if (e.kind == Element::Kind::End && e.id == g.root && items_[i].origin == 0) return true;
    }
    return false;
}

void Matcher::rollback(size_t n) {
    n = std::min(n, token_sets_.size());
    if (n == 0) return;
    const uint32_t target = token_sets_[token_sets_.size() - n];
    while (set_start_.size() > target) pop_set();
    token_sets_.resize(token_sets_.size() - n);
}

const std::vector<uint64_t>* MaskCache::find(uint64_t state) const {
    auto it = masks_.find(state);
    return it == masks_.end() ? nullptr : &it->second;
}

void MaskCache::put(uint64_t state, const std::vector<uint64_t>& mask) {
    if (masks_.size() >= kMaxEntries) masks_.clear();
    masks_[state] = mask;
}

// The hash of set k: its open items' positions and their origin sets' hashes (the set itself
// for items it predicted), computed once per committed set, lowest first.
uint64_t Matcher::state_hash() {
    const size_t n = set_start_.size();
    if (set_hash_.size() > n) set_hash_.resize(n);
    while (set_hash_.size() < n) {
        const size_t k = set_hash_.size();
        const uint32_t end = k + 1 < n ? set_start_[k + 1] : static_cast<uint32_t>(items_.size());
        uint64_t h = 0x9e3779b97f4a7c15ULL;
        for (uint32_t i = set_start_[k]; i < end; ++i) {
            // A completed item did its work when the set was closed: only whether the root is
            // complete (the sentence may stop) still matters. Leaving the others out makes the
            // sets inside a loop (a JSON string's characters) hash alike wherever they sit.
            const Element& e = g_->elements[items_[i].pos];
            if (e.kind == Element::Kind::End) {
                if (e.id == g_->root && items_[i].origin == 0) h = hash_of(h ^ 0x5bd1e995ULL);
                continue;
            }
            const uint64_t origin = items_[i].origin == k ? 1 : set_hash_[items_[i].origin];
            h = hash_of(h ^ hash_of((static_cast<uint64_t>(items_[i].pos) << 1) ^ origin));
        }
        set_hash_.push_back(h | 2);
    }
    return set_hash_.back();
}

void Matcher::allowed_tokens(const TokenTrie& trie, std::vector<uint64_t>& mask, MaskCache* cache) {
    uint64_t state = 0;
    if (cache) {
        state = state_hash();
        if (const std::vector<uint64_t>* hit = cache->find(state)) {
            mask = *hit;
            return;
        }
    }
    walk_trie(trie, mask);
    if (cache) cache->put(state, mask);
}

void Matcher::walk_trie(const TokenTrie& trie, std::vector<uint64_t>& mask) {
    mask.assign(trie.mask_words(), 0);
    if (can_stop())
        for (int32_t t : trie.stop_tokens()) mask[t >> 6] |= 1ULL << (t & 63);
    if (!fast_paths_ || !walk_run(trie, mask))
        walk_nodes(trie, mask, std::bitset<256>{}.set(), true);
}

// Sets the bits of the trie's tokens accepted from the current state. A subtree at depth 1 is
// walked only when its byte is in `first`; with feed_first false that byte is not fed (an
// escape trie's first byte: the current set already stands after it).
void Matcher::walk_nodes(const TokenTrie& trie, std::vector<uint64_t>& mask,
                         const std::bitset<256>& first, bool feed_first) {
    if (state_infos_.size() > kMaxStateInfos) state_infos_.clear();  // never during a walk
    const std::vector<TokenTrie::Node>& nodes = trie.nodes();
    const auto n = static_cast<uint32_t>(nodes.size());
    StateInfo* info = fast_paths_ && n >= min_loop_nodes_ ? state_info() : nullptr;
    const Walk walk{trie, mask};
    if (feed_first && !info) {
        for (uint32_t c = 0; c < n; c = nodes[c].subtree_end)
            if (first.test(nodes[c].byte)) walk_plain(walk, c);
        return;
    }
    const size_t mark = children_.size();
    for (uint32_t c = 0; c < n; c = nodes[c].subtree_end)
        if (first.test(nodes[c].byte)) children_.push_back({0, c});
    if (feed_first) {
        walk_groups(walk, mark, info);
    } else {
        allow(walk, mark, children_.size());
        if (info)
            walk_children(walk, mark, children_.size(), info);
        else
            for (size_t k = mark; k < children_.size(); ++k)
                walk_below_plain(walk, children_[k].second);
    }
    children_.resize(mark);
}

// Feeds node's byte onto the newest set; if accepted, allows its tokens and walks below it,
// one byte at a time (the plain walk, and small subtrees of the fast one).
void Matcher::walk_plain(const Walk& walk, uint32_t node) {
    if (!push_byte(walk.trie.nodes()[node].byte)) return;
    const size_t mark = children_.size();
    children_.push_back({0, node});
    allow(walk, mark, mark + 1);
    children_.resize(mark);
    walk_below_plain(walk, node);
    pop_set();
}

void Matcher::walk_below_plain(const Walk& walk, uint32_t node) {
    const std::vector<TokenTrie::Node>& nodes = walk.trie.nodes();
    for (uint32_t c = node + 1; c < nodes[node].subtree_end; c = nodes[c].subtree_end)
        walk_plain(walk, c);
}

// Allows the tokens ending at the nodes children_[begin, end).
void Matcher::allow(const Walk& walk, size_t begin, size_t end) {
    const std::vector<int32_t>& ids = walk.trie.token_ids();
    for (size_t k = begin; k < end; ++k) {
        const TokenTrie::Node& n = walk.trie.nodes()[children_[k].second];
        for (uint32_t j = n.tokens_begin; j < n.tokens_end; ++j)
            walk.mask[ids[j] >> 6] |= 1ULL << (ids[j] & 63);
    }
}

// The children of all the nodes children_[begin, end), whose prefixes all stand at the newest
// set (their tokens allowed already): walked together, level by level, by byte group.
void Matcher::walk_children(const Walk& walk, size_t begin, size_t end, StateInfo* info) {
    const std::vector<TokenTrie::Node>& nodes = walk.trie.nodes();
    const size_t mark = children_.size();
    for (size_t p = begin; p < end; ++p) {
        const uint32_t node = children_[p].second;
        for (uint32_t c = node + 1; c < nodes[node].subtree_end; c = nodes[c].subtree_end)
            children_.push_back({0, c});
    }
    if (children_.size() > mark) walk_groups(walk, mark, info);
    children_.resize(mark);
}

// The nodes children_[mark, end()), all children of prefixes standing at the newest set, taken
// by byte group: a group no item scans is dropped at once; a group is fed once for all its
// nodes (they lead to the same set) and their children are walked together; a group that
// leads back to the same parse state (a loop: a string's plain characters, found when first
// fed) is not fed at all, the set standing for the longer prefixes too. Each shortcut gives
// the sets the plain walk would build.
void Matcher::walk_groups(const Walk& walk, size_t mark, StateInfo* info) {
    const std::vector<TokenTrie::Node>& nodes = walk.trie.nodes();
    size_t kept = mark;
    for (size_t k = mark; k < children_.size(); ++k) {
        const uint16_t group = info->group[nodes[children_[k].second].byte];
        if (group != 0) children_[kept++] = {group, children_[k].second};
    }
    children_.resize(kept);
    std::sort(children_.begin() + static_cast<std::ptrdiff_t>(mark), children_.end());
    const uint64_t hash = state_hash();
    const size_t end = children_.size();
    for (size_t k = mark; k < end;) {
        const uint16_t group = children_[k].first;
        size_t stop = k, weight = 0;
        for (; stop < end && children_[stop].first == group; ++stop)
            weight += nodes[children_[stop].second].subtree_end - children_[stop].second;
        const uint8_t byte = nodes[children_[k].second].byte;
        bool loop = info->loop.test(byte);
        if (!loop && !info->tested.test(byte)) {
            push_byte(byte);
            loop = state_hash() == hash;
            for (size_t b = 0; b < 256; ++b)
                if (info->group[b] == group) (loop ? info->loop : info->tested).set(b);
            if (loop) pop_set();
        } else if (!loop) {
            push_byte(byte);
        }
        allow(walk, k, stop);
        StateInfo* next = loop ? info : child_info(weight);
        if (next) {
            walk_children(walk, k, stop, next);
        } else {
            for (size_t c = k; c < stop; ++c) walk_below_plain(walk, children_[c].second);
        }
        if (!loop) pop_set();
        k = stop;
    }
}

Matcher::StateInfo* Matcher::child_info(size_t subtree) {
    return fast_paths_ && subtree >= min_loop_nodes_ ? state_info() : nullptr;
}

// What a walk needs of the newest set's parse state, memoised by state hash: its bytes grouped
// by the items scanning them (the scanned bytes split by each distinct byte set of an item,
// so two bytes share a group exactly when the same items scan them), and which groups lead
// back to the same state (found as the walk first feeds them).
Matcher::StateInfo* Matcher::state_info() {
    auto [it, added] = state_infos_.try_emplace(state_hash());
    StateInfo& info = it->second;
    if (!added) return &info;
    const Grammar& g = *g_;
    parts_.clear();
    seen_sets_.clear();
    for (size_t i = set_start_.back(); i < items_.size(); ++i) {
        const Element& e = g.elements[items_[i].pos];
        if (e.kind != Element::Kind::Bytes ||
            std::find(seen_sets_.begin(), seen_sets_.end(), e.id) != seen_sets_.end())
            continue;
        seen_sets_.push_back(e.id);
        const std::bitset<256>& set = g.byte_sets[e.id];
        std::bitset<256> rest = set;
        for (size_t p = 0, n = parts_.size(); p < n && rest.any(); ++p) {
            const std::bitset<256> in = parts_[p] & set;
            if (in.none()) continue;
            rest &= ~in;
            if (in != parts_[p]) {
                parts_.push_back(parts_[p] & ~set);
                parts_[p] = in;
            }
        }
        if (rest.any()) parts_.push_back(rest);
    }
    for (size_t p = 0; p < parts_.size(); ++p)
        for (size_t b = parts_[p]._Find_first(); b < 256; b = parts_[p]._Find_next(b))
            info.group[b] = static_cast<uint16_t>(p + 1);
    return &info;
}

// How the newest set scans the bytes of `run`: none of them, all alike (the same items scan
// each, so each leads to the same next set), or some other way.
Matcher::RunScan Matcher::scan_of(const std::bitset<256>& run) const {
    const Grammar& g = *g_;
    RunScan scan = RunScan::None;
    for (size_t i = set_start_.back(); i < items_.size(); ++i) {
        const Element& e = g.elements[items_[i].pos];
        if (e.kind != Element::Kind::Bytes) continue;
        const std::bitset<256> both = g.byte_sets[e.id] & run;
        if (both.none()) continue;
        if (both != run) return RunScan::Mixed;
        scan = RunScan::Alike;
    }
    return scan;
}

// The largest group of bytes the newest set scans alike (grouped by a signature of the items
// scanning each byte, then checked exactly), weighing each byte by `weight`; its total weight.
uint32_t Matcher::largest_group(const std::vector<uint32_t>& weight,
                                std::bitset<256>& group) const {
    const Grammar& g = *g_;
    std::vector<uint64_t> sig(256, 0);
    for (size_t i = set_start_.back(); i < items_.size(); ++i) {
        const Element& e = g.elements[items_[i].pos];
        if (e.kind != Element::Kind::Bytes) continue;
        const std::bitset<256>& set = g.byte_sets[e.id];
        for (size_t b = 0; b < 256; ++b)
            if (set.test(b)) sig[b] = hash_of(sig[b] ^ (i + 1));
    }
    std::unordered_map<uint64_t, uint32_t> total;
    uint64_t best = 0;
    for (size_t b = 0; b < 256; ++b) {
        if (sig[b] == 0) continue;
        const uint32_t n = total[sig[b]] += weight[b];
        if (best == 0 || n > total[best]) best = sig[b];
    }
    if (best == 0) return 0;
    for (size_t b = 0; b < 256; ++b)
        if (sig[b] == best) group.set(b);
    return scan_of(group) == RunScan::Alike ? total[best] : 0;
}

namespace {

// mask |= the tokens of `run_only` whose first byte is in `first`.
void add_run_tokens(const TokenTrie& trie, const std::vector<uint64_t>& run_only,
                    const std::bitset<256>& first, std::vector<uint64_t>& mask) {
    const std::vector<TokenTrie::Node>& nodes = trie.nodes();
    const std::vector<int32_t>& ids = trie.token_ids();
    for (size_t i = 0; i < nodes.size(); i = nodes[i].subtree_end) {
        if (!first.test(nodes[i].byte)) continue;
        const size_t end = nodes[i].subtree_end < nodes.size()
                               ? nodes[nodes[i].subtree_end].tokens_begin
                               : ids.size();
        for (size_t j = nodes[i].tokens_begin; j < end; ++j)
            mask[ids[j] >> 6] |= run_only[ids[j] >> 6] & (1ULL << (ids[j] & 63));
    }
}

}  // namespace

// The run fast path. With S0 the bytes the current set Z_0 scans alike, S those the next set
// scans alike and Z_k the set after a run of k bytes (one of S0, then bytes of S): while Z_k
// scans S alike, every byte of S leads to the same Z_k+1. The chain ends where a Z_m scans no
// byte of S (a counted run is full) or where Z_k+1 is Z_k's parse state again (a loop: from
// there on every Z is the same). Then a token that is a run of n bytes is allowed when n <= m,
// a token whose run prefix has r bytes is decided by the rest of it from Z_r, and a token
// starting outside S0 by the plain walk. A Z that scans only part of S ends the fast path.
bool Matcher::walk_run(const TokenTrie& trie, std::vector<uint64_t>& mask) {
    std::vector<uint32_t> weight(256);
    for (size_t b = 0; b < 256; ++b) weight[b] = trie.nodes_under(static_cast<uint8_t>(b));
    std::bitset<256> s0, s;
    if (largest_group(weight, s0) < std::max<uint32_t>(min_run_nodes_, 1)) return false;
    const size_t base = set_start_.size();
    uint64_t hash = state_hash();
    push_byte(lowest(s0));
    std::fill(weight.begin(), weight.end(), 1);
    if (largest_group(weight, s) == 0) s = s0;
    if (s.count() < kMinRunBytes) {
        pop_set();
        return false;
    }
    bool loops = false;
    size_t m = 1;  // Z_0 .. Z_m-1 scan their run bytes alike; Z_m is the newest set
    if (s == s0 && state_hash() == hash) {
        pop_set();
        loops = true;
        m = 0;
    }
    hash = state_hash();
    const std::shared_ptr<const ByteRuns> runs = trie.byte_runs().get(trie, s);
    const size_t longest = std::max(runs->only_run.size(), runs->escapes.size());
    for (; !loops && m < longest; ++m) {
        const RunScan scan = scan_of(s);
        if (scan == RunScan::Mixed) {
            while (set_start_.size() > base) pop_set();
            return false;
        }
        if (scan == RunScan::None) break;
        push_byte(lowest(s));
        const uint64_t next = state_hash();
        if (next == hash) {
            pop_set();
            loops = true;
            break;
        }
        hash = next;
    }
    const size_t n = loops ? runs->only_run.size() : std::min(m, runs->only_run.size());
    if (n > 0 && s == s0)
        for (size_t w = 0; w < mask.size(); ++w) mask[w] |= runs->only_run_in_s[n - 1][w];
    else if (n > 0)
        add_run_tokens(trie, runs->only_run[n - 1], s0, mask);
    // Escapes with a run prefix of r bytes from Z_r (from Z_m for every r >= m in a loop).
    for (size_t r = std::max<size_t>(m, 1); r >= 1; --r) {
        const size_t last = loops && r == std::max<size_t>(m, 1)
                                ? runs->escapes.size()
                                : std::min(r, runs->escapes.size());
        for (size_t e = r; e <= last; ++e)
            if (runs->escapes[e - 1]) walk_nodes(*runs->escapes[e - 1], mask, s0, false);
        if (m > 0) pop_set();
    }
    walk_nodes(trie, mask, ~s0, true);
    return true;
}

}  // namespace kite::grammar
