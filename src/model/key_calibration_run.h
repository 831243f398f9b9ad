// The calibration of quantized keys (kv/key_calibration.h) for one model: its queries' and
// keys' statistics over a short text, run through the model with an f32 cache.
#pragma once

#include <cstdint>
#include <span>

#include "core/thread_pool.h"
#include "kv/key_calibration.h"
#include "model/model.h"

namespace kite {

// The calibration a cache of `types` stores its keys with: empty unless the key type takes
// one (KvTypeInfo::calibrated_keys). `tokens`: the calibration text as this model's
// vocabulary spells it (engine/calibration_text.h); kite::Error when it is empty and a
// calibration is needed. Deterministic: the same model and tokens give the same calibration,
// so every cache of the model stores its keys alike (the prefix cache relies on it).
KeyCalibration key_calibration(const Model& model, KvTypes types, std::span<const int32_t> tokens,
                               ThreadPool& pool);

}  // namespace kite
