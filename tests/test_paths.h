// Where tests find the default model and the shared test data.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace kite::test {

// The default model installed by scripts/install-model.sh (KITE_MODEL overrides). Tests that need
// it fail, rather than skip, when it is missing: the README's test command installs it.
inline std::string default_model_path() {
    if (const char* env = std::getenv("KITE_MODEL"); env && *env) return env;
    return std::string(KITE_SOURCE_DIR) + "/models/default.gguf";
}

// ../shared/testdata beside the repository (KITE_TESTDATA overrides).
inline std::string testdata_dir() {
    if (const char* env = std::getenv("KITE_TESTDATA"); env && *env) return env;
    return std::string(KITE_SOURCE_DIR) + "/../shared/testdata";
}

}  // namespace kite::test
