// A draft model proposes token ids that the target model verifies, so the ids must mean the
// same text in both: the same number of tokens and the same token strings, id for id.
#pragma once

#include "gguf/gguf_file.h"

namespace kite {

// Throws kite::Error naming both files and the first difference when `draft`'s vocabulary
// (tokenizer.ggml.tokens and the logits width `draft_n_vocab`) is not `target`'s.
void check_same_vocabulary(const GgufFile& target, int64_t target_n_vocab, const GgufFile& draft,
                           int64_t draft_n_vocab);

}  // namespace kite
