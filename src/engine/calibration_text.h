// The text that calibrates quantized keys (kv/key_calibration.h): a little prose, a dialogue,
// code and a table, so the statistics see the kinds of text a model is asked about. About
// 450 tokens: the run costs one short prefill when a cache is created.
#pragma once

#include <cstdint>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace kite {

// The text as `tokenizer` spells it, with BOS where the vocabulary adds one.
std::vector<int32_t> calibration_tokens(const Tokenizer& tokenizer);

}  // namespace kite
