#include "grammar/matcher.h"

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
    items_.resize(set_start_.back());
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
    if (!fast_paths_ || !walk_run(trie, mask)) walk_nodes(trie, mask, nullptr);
}

// Sets the bits of the trie's tokens accepted from the current state, skipping the top-level
// subtrees whose first byte is in `skip_first`.
void Matcher::walk_nodes(const TokenTrie& trie, std::vector<uint64_t>& mask,
                         const std::bitset<256>* skip_first) {
    const size_t base = set_start_.size();
    const std::vector<TokenTrie::Node>& nodes = trie.nodes();
    const std::vector<int32_t>& ids = trie.token_ids();
    for (size_t i = 0; i < nodes.size();) {
        const TokenTrie::Node& node = nodes[i];
        while (set_start_.size() >= base + node.depth) pop_set();
        const bool skipped = skip_first && node.depth == 1 && skip_first->test(node.byte);
        if (skipped || !push_byte(node.byte)) {
            i = node.subtree_end;
            continue;
        }
        for (uint32_t j = node.tokens_begin; j < node.tokens_end; ++j)
            mask[ids[j] >> 6] |= 1ULL << (ids[j] & 63);
        ++i;
    }
    while (set_start_.size() > base) pop_set();
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

// Sets the bits of an escape trie's tokens (first byte, then the bytes after the run) accepted
// from the current set, where a first byte counts when it is in `first` (it is not fed: the
// current set already stands after the token's run prefix).
void Matcher::walk_escapes(const TokenTrie& escapes, std::vector<uint64_t>& mask,
                           const std::bitset<256>& first) {
    const size_t base = set_start_.size();
    const std::vector<TokenTrie::Node>& nodes = escapes.nodes();
    const std::vector<int32_t>& ids = escapes.token_ids();
    for (size_t i = 0; i < nodes.size();) {
        const TokenTrie::Node& node = nodes[i];
        if (node.depth == 1) {
            while (set_start_.size() > base) pop_set();
            i = first.test(node.byte) ? i + 1 : node.subtree_end;
            continue;
        }
        while (set_start_.size() > base + node.depth - 2) pop_set();
        if (!push_byte(node.byte)) {
            i = node.subtree_end;
            continue;
        }
        for (uint32_t j = node.tokens_begin; j < node.tokens_end; ++j)
            mask[ids[j] >> 6] |= 1ULL << (ids[j] & 63);
        ++i;
    }
    while (set_start_.size() > base) pop_set();
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
            if (runs->escapes[e - 1]) walk_escapes(*runs->escapes[e - 1], mask, s0);
        if (m > 0) pop_set();
    }
    walk_nodes(trie, mask, &s0);
    return true;
}

}  // namespace kite::grammar
