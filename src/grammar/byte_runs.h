// Per byte set S, the vocabulary split for the matcher's run fast path. A token's run prefix
// is its first byte (any) and the bytes of S after it. Inside a JSON string (or any character
// class run, counted or not) every byte of S leads to the same next parse state, so a token
// that is all run is allowed when the run may be that long and its first byte may start it,
// and any other token is decided by its first byte and its part after the run: a walk of a
// few thousand suffix nodes instead of the whole vocabulary. The first byte is kept apart
// because where a run starts it often differs (a property name other than the declared ones,
// a URI's scheme), and keying on it would build an index per schema.
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
    // only_run[n - 1]: the tokens of 1 to n bytes that are all run (n up to the longest);
    // only_run_in_s: the same with the first byte in S too.
    std::vector<std::vector<uint64_t>> only_run, only_run_in_s;
    // escapes[r - 1]: token t -> its first byte, then its bytes after its run prefix, for the
    // tokens whose run prefix is r bytes long and not the whole token (null when none is).
    std::vector<std::shared_ptr<TokenTrie>> escapes;
};

// Built on first use per byte set and kept for the trie's lifetime (a bounded number of sets);
// safe to share between threads.
class ByteRunsCache {
  public:
    std::shared_ptr<const ByteRuns> get(const TokenTrie& trie, const std::bitset<256>& set);

  private:
    static constexpr size_t kMaxSets = 64;  // up to a few MB each; the least used goes
    std::mutex mutex_;
    struct Entry {
        std::shared_ptr<const ByteRuns> runs;
        uint64_t used = 0;
    };
    std::map<std::array<uint64_t, 4>, Entry> runs_;
    uint64_t clock_ = 0;
};

}  // namespace kite::grammar
