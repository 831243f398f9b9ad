// The calibration of quantized keys (kv/key_calibration.h) for one model: its queries' and
// keys' statistics over a short text, run through the model with an f32 cache.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "kv/key_calibration.h"
#include "model/model.h"

namespace kite {

// What a calibration runs, in one model's tokens (engine/calibration_text.h makes it).
struct CalibrationTokens {
    std::vector<int32_t> text;  // the calibration text, from position 0
    // Tokens that sequences begin with, each run alone at position 0 for the first-position
    // key: BOS where the vocabulary adds one, else the first tokens of several paragraphs.
    std::vector<int32_t> firsts;
};

// The calibration a cache of `types` stores its keys with: empty unless the key type takes
// one (KvTypeInfo::calibrated_keys); kite::Error when the text is empty and a calibration is
// needed. Deterministic: the same model and tokens give the same calibration, so every cache
// of the model stores its keys alike (the prefix cache relies on it).
KeyCalibration key_calibration(const Model& model, KvTypes types, const CalibrationTokens& tokens,
                               ThreadPool& pool);

}  // namespace kite
