#include "grammar/matcher.h"

#include "grammar/token_trie.h"

namespace kite::grammar {

namespace {

uint64_t key_of(uint32_t pos, uint32_t origin) {
    return (static_cast<uint64_t>(pos) << 32) | origin;
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

// The hash of set k: its items' positions and their origin sets' hashes (the set itself for
// items it predicted), computed once per committed set, lowest first.
uint64_t Matcher::state_hash() {
    const size_t n = set_start_.size();
    if (set_hash_.size() > n) set_hash_.resize(n);
    while (set_hash_.size() < n) {
        const size_t k = set_hash_.size();
        const uint32_t end = k + 1 < n ? set_start_[k + 1] : static_cast<uint32_t>(items_.size());
        uint64_t h = 0x9e3779b97f4a7c15ULL;
        for (uint32_t i = set_start_[k]; i < end; ++i) {
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
    const auto set_bit = [&](int32_t t) { mask[t >> 6] |= 1ULL << (t & 63); };
    if (can_stop())
        for (int32_t t : trie.stop_tokens()) set_bit(t);
    const size_t base = set_start_.size();
    const std::vector<TokenTrie::Node>& nodes = trie.nodes();
    const std::vector<int32_t>& ids = trie.token_ids();
    for (size_t i = 0; i < nodes.size();) {
        const TokenTrie::Node& node = nodes[i];
        while (set_start_.size() >= base + node.depth) pop_set();
        if (!push_byte(node.byte)) {
            i = node.subtree_end;
            continue;
        }
        for (uint32_t j = node.tokens_begin; j < node.tokens_end; ++j) set_bit(ids[j]);
        ++i;
    }
    while (set_start_.size() > base) pop_set();
}

}  // namespace kite::grammar
