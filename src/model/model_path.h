// Which model file a name means: the CLI's -m, the Python LLM(model) and KITE_MODEL share it.
#pragma once

#include <string>

namespace kite {

// The model to use: `flag` (a path, or the name of a model installed as models/NAME.gguf),
// else $KITE_MODEL, else the default model installed by scripts/install-model.sh. Throws
// kite::Error with what to do when none is found.
std::string resolve_model_path(const std::string& flag);

}  // namespace kite
