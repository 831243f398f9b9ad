// The text that calibrates quantized keys (kv/key_calibration.h): a little prose, a dialogue,
// code and a table, so the statistics see the kinds of text a model is asked about. About
// 450 tokens: the run costs one short prefill when a cache is created.
#pragma once

#include "model/key_calibration_run.h"
#include "tokenizer/tokenizer.h"

namespace kite {

// The text as `tokenizer` spells it, with BOS where the vocabulary adds one; the first tokens
// are that BOS, or else the first token of each of the text's first 8 paragraphs.
CalibrationTokens calibration_tokens(const Tokenizer& tokenizer);

}  // namespace kite
