// The vocabulary as a byte trie, built once per tokenizer and shared by every matcher: nodes
// in depth-first order, each with the byte on its edge, its depth and where its subtree ends,
// so a mask walk can skip a rejected prefix's whole subtree in one step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kite::grammar {

class ByteRunsCache;

class TokenTrie {
  public:
    // token_bytes[t]: the bytes token t stands for; empty for tokens a grammar never allows
    // (control tokens). stop_tokens: allowed exactly when the grammar may stop.
    TokenTrie(const std::vector<std::string>& token_bytes, std::vector<int32_t> stop_tokens);

    struct Node {
        uint8_t byte;
        uint16_t depth;         // 1 for the first byte of a token
        uint32_t subtree_end;   // the index after this node's last descendant
        uint32_t tokens_begin;  // the tokens ending here: token_ids[tokens_begin, tokens_end)
        uint32_t tokens_end;
    };

    const std::vector<Node>& nodes() const { return nodes_; }
    const std::vector<int32_t>& token_ids() const { return token_ids_; }
    // deepest()[n]: the length of the longest token in node n's subtree (0: none), so a walk
    // for the longest token skips the subtrees that cannot hold one.
    const std::vector<uint16_t>& deepest() const { return deepest_; }
    const std::vector<int32_t>& stop_tokens() const { return stop_tokens_; }
    size_t n_vocab() const { return n_vocab_; }
    size_t mask_words() const { return (n_vocab_ + 63) / 64; }
    // Nodes under each first byte (the size of that top-level subtree): what a walk costs.
    uint32_t nodes_under(uint8_t first) const { return nodes_under_[first]; }
    // The vocabulary split by byte runs, built lazily and shared by every matcher.
    ByteRunsCache& byte_runs() const { return *byte_runs_; }

  private:
    std::vector<Node> nodes_;
    std::vector<int32_t> token_ids_;
    std::vector<uint16_t> deepest_;
    std::vector<int32_t> stop_tokens_;
    size_t n_vocab_ = 0;
    std::vector<uint32_t> nodes_under_ = std::vector<uint32_t>(256, 0);
    std::shared_ptr<ByteRunsCache> byte_runs_;
};

}  // namespace kite::grammar
