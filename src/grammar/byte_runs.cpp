#include "grammar/byte_runs.h"

#include <string>

#include "grammar/token_trie.h"

namespace kite::grammar {

namespace {

std::array<uint64_t, 4> key_of(const std::bitset<256>& set) {
    std::array<uint64_t, 4> key{};
    for (size_t b = 0; b < 256; ++b)
        if (set.test(b)) key[b >> 6] |= 1ULL << (b & 63);
    return key;
}

std::vector<std::vector<uint64_t>> cumulative(const std::vector<std::vector<int32_t>>& by_length,
                                              size_t words) {
    std::vector<std::vector<uint64_t>> out;
    std::vector<uint64_t> mask(words, 0);
    for (const std::vector<int32_t>& tokens : by_length) {
        for (int32_t t : tokens) mask[t >> 6] |= 1ULL << (t & 63);
        out.push_back(mask);
    }
    return out;
}

// One pass over the trie in depth-first order, keeping the path and the length of its run
// prefix at each depth.
std::shared_ptr<const ByteRuns> build(const TokenTrie& trie, const std::bitset<256>& set) {
    std::vector<std::vector<int32_t>> only, only_in_s;  // by length - 1
    std::vector<std::vector<std::string>> escapes;      // [r - 1][t]
    std::string path;
    std::vector<size_t> run;  // run[d]: the run prefix length of the path's first d + 1 bytes
    const std::vector<int32_t>& ids = trie.token_ids();
    for (const TokenTrie::Node& node : trie.nodes()) {
        path.resize(node.depth - 1);
        run.resize(node.depth - 1);
        path.push_back(static_cast<char>(node.byte));
        const size_t before = run.empty() ? 0 : run.back();
        const bool in_run = path.size() == 1 || (before == path.size() - 1 && set.test(node.byte));
        run.push_back(in_run ? path.size() : before);
        const size_t r = run.back();
        for (uint32_t j = node.tokens_begin; j < node.tokens_end; ++j) {
            if (r == path.size()) {
                if (only.size() < r) only.resize(r), only_in_s.resize(r);
                only[r - 1].push_back(ids[j]);
                if (set.test(static_cast<uint8_t>(path[0]))) only_in_s[r - 1].push_back(ids[j]);
                continue;
            }
            if (escapes.size() < r) escapes.resize(r);
            if (escapes[r - 1].empty()) escapes[r - 1].resize(trie.n_vocab());
            escapes[r - 1][ids[j]] = path.substr(0, 1) + path.substr(r);
        }
    }
    auto runs = std::make_shared<ByteRuns>();
    runs->only_run = cumulative(only, trie.mask_words());
    runs->only_run_in_s = cumulative(only_in_s, trie.mask_words());
    for (const std::vector<std::string>& s : escapes)
        runs->escapes.push_back(s.empty() ? nullptr
                                          : std::make_shared<TokenTrie>(s, std::vector<int32_t>{}));
    return runs;
}

}  // namespace

std::shared_ptr<const ByteRuns> ByteRunsCache::get(const TokenTrie& trie,
                                                   const std::bitset<256>& set) {
    const std::array<uint64_t, 4> key = key_of(set);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = runs_.find(key);
        if (it != runs_.end()) {
            it->second.used = ++clock_;
            return it->second.runs;
        }
    }
    // Built outside the lock: two threads may both build the same set; either result is right.
    std::shared_ptr<const ByteRuns> runs = build(trie, set);
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
