// The vocabulary tokens that hold a DRY sequence breaker (sampling/dry.h): the sampler sees
// token ids only, so the breaker strings are matched against each token's text here, once per
// list of breakers an engine meets.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace kite {

class DryBreakers {
  public:
    explicit DryBreakers(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

    // One flag per token: 1 where the token's text holds one of `breakers` (special tokens,
    // which have no text, never do).
    std::shared_ptr<const std::vector<uint8_t>> flags(const std::vector<std::string>& breakers);

  private:
    const Tokenizer& tokenizer_;
    std::map<std::vector<std::string>, std::shared_ptr<const std::vector<uint8_t>>> tables_;
};

}  // namespace kite
