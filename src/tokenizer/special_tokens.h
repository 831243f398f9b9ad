// Finding special tokens inside text before the text is tokenized: a special token's string
// becomes that token instead of being split into ordinary tokens.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace kite {

// Either a special token or a run of text between special tokens.
struct Fragment {
    int32_t token = kNoToken;  // kNoToken for text
    std::string_view text;     // the token's text, or the run of text
};

class SpecialTokenSplitter {
  public:
    explicit SpecialTokenSplitter(const Vocab& vocab);  // `vocab` must outlive the splitter

    // Splits `text` at the special tokens it contains. User-defined tokens are always
    // matched; control (and unknown) tokens only when `parse_control` is set, so that plain
    // text can never inject them. Longer tokens are matched first.
    std::vector<Fragment> split(std::string_view text, bool parse_control) const;

  private:
    void split_on(int32_t id, std::vector<Fragment>& fragments) const;

    const Vocab& vocab_;
    std::vector<int32_t> candidates_;  // longest text first
};

}  // namespace kite
