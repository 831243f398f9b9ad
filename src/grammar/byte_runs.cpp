#include "grammar/byte_runs.h"

#include <string>

#include "grammar/token_trie.h"

namespace kite::grammar {

namespace {

std::array<uint64_t, 8> key_of(const RunShape& shape) {
    std::array<uint64_t, 8> key{};
    for (size_t b = 0; b < 256; ++b) {
        if (shape.first.test(b)) key[b >> 6] |= 1ULL << (b & 63);
        if (shape.rest.test(b)) key[4 + (b >> 6)] |= 1ULL << (b & 63);
    }
    return key;
}

// One pass over the trie in depth-first order, keeping the path and the length of its run
// prefix at each depth.
std::shared_ptr<const ByteRuns> build(const TokenTrie& trie, const RunShape& shape) {
    std::vector<std::vector<int32_t>> only_by_length;
    std::vector<std::vector<std::string>> suffixes;  // [r - 1][t]
    std::string path;
    std::vector<size_t> run;  // run[d]: the run prefix length of the path's first d + 1 bytes
    const std::vector<int32_t>& ids = trie.token_ids();
    for (const TokenTrie::Node& node : trie.nodes()) {
        path.resize(node.depth - 1);
        run.resize(node.depth - 1);
        path.push_back(static_cast<char>(node.byte));
        const size_t before = run.empty() ? 0 : run.back();
        const std::bitset<256>& set = path.size() == 1 ? shape.first : shape.rest;
        run.push_back(before == path.size() - 1 && set.test(node.byte) ? path.size() : before);
        const size_t r = run.back();
        for (uint32_t j = node.tokens_begin; j < node.tokens_end; ++j) {
            if (r == path.size()) {
                if (only_by_length.size() < r) only_by_length.resize(r);
                only_by_length[r - 1].push_back(ids[j]);
            } else if (r > 0) {
                if (suffixes.size() < r) suffixes.resize(r);
                if (suffixes[r - 1].empty()) suffixes[r - 1].resize(trie.n_vocab());
                suffixes[r - 1][ids[j]] = path.substr(r);
            }
        }
    }
    auto runs = std::make_shared<ByteRuns>();
    std::vector<uint64_t> mask(trie.mask_words(), 0);
    for (const std::vector<int32_t>& tokens : only_by_length) {
        for (int32_t t : tokens) mask[t >> 6] |= 1ULL << (t & 63);
        runs->only_run.push_back(mask);
    }
    for (const std::vector<std::string>& s : suffixes)
        runs->escapes.push_back(s.empty() ? nullptr
                                          : std::make_shared<TokenTrie>(s, std::vector<int32_t>{}));
    return runs;
}

}  // namespace

std::shared_ptr<const ByteRuns> ByteRunsCache::get(const TokenTrie& trie, const RunShape& shape) {
    const std::array<uint64_t, 8> key = key_of(shape);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = runs_.find(key);
        if (it != runs_.end()) {
            it->second.used = ++clock_;
            return it->second.runs;
        }
    }
    // Built outside the lock: two threads may both build the same shape; either result is right.
    std::shared_ptr<const ByteRuns> runs = build(trie, shape);
    std::lock_guard<std::mutex> lock(mutex_);
    if (runs_.size() >= kMaxSets) {
        auto oldest = runs_.begin();
        for (auto it = runs_.begin(); it != runs_.end(); ++it)
            if (it->second.used < oldest->second.used) oldest = it;
        runs_.erase(oldest);
    }
    runs_[key] = {runs, ++clock_};
    return runs;
}

}  // namespace kite::grammar
