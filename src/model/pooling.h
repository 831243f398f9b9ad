// Pooling: one vector from the hidden states of an input's tokens (an embedding).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "model/model_config.h"

namespace kite {

// One vector of `width` from n rows: their mean, the first ([CLS]) or the last.
void pool_rows(Pooling pooling, const float* rows, int64_t n, int64_t width, float* out);

// "mean", "cls" or "last" (as llama.cpp's --pooling spells them); nullopt for anything else.
std::optional<Pooling> pooling_from_name(std::string_view name);

}  // namespace kite
