// Per run shape (a first byte from a set S0, then bytes from S: written S0 S*), the vocabulary
// split for the matcher's run fast path: the tokens that are runs, by length, and tries of
// what the others hold after their longest run prefix, by its length. Inside a JSON string
// (or any character class run, counted or not) every byte of S leads to the same next parse
// state, so a token that is a run is allowed when the run may be that long and any other
// token is decided by its part after the run: a walk of a few thousand suffix nodes instead of
// the whole vocabulary. S0 differs from S where the first byte is special (a property name
// other than the declared ones, a URI's scheme).
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace kite::grammar {

class TokenTrie;

struct ByteRuns {
    // only_run[n - 1]: the tokens of 1 to n bytes that are runs (n up to the longest of them).
    std::vector<std::vector<uint64_t>> only_run;
    // escapes[r - 1]: token t -> its bytes after its run prefix, for the tokens whose run
    // prefix is r bytes long and not the whole token (null when there is none).
    std::vector<std::shared_ptr<TokenTrie>> escapes;
};

struct RunShape {
    std::bitset<256> first;  // S0
    std::bitset<256> rest;   // S
};

// Built on first use per shape and kept for the trie's lifetime (a bounded number of sets);
// safe to share between threads.
class ByteRunsCache {
  public:
    std::shared_ptr<const ByteRuns> get(const TokenTrie& trie, const RunShape& shape);

  private:
    static constexpr size_t kMaxSets = 64;  // up to a few MB each; the least used goes
    std::mutex mutex_;
    struct Entry {
        std::shared_ptr<const ByteRuns> runs;
        uint64_t used = 0;
    };
    std::map<std::array<uint64_t, 8>, Entry> runs_;
    uint64_t clock_ = 0;
};

}  // namespace kite::grammar
