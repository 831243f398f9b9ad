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

// A real model of ../shared/MODELS.md by id: installed (models/ID.gguf), else a copy in
// ${KITE_CACHE:-~/.cache/kite}/real; empty when neither is there (tests then skip: CI
// installs only the default model).
inline std::string find_real_model(const std::string& id) {
    namespace fs = std::filesystem;
    const fs::path installed = fs::path(KITE_SOURCE_DIR) / "models" / (id + ".gguf");
    if (fs::exists(installed)) return installed.string();
    const char* cache = std::getenv("KITE_CACHE");
    const char* home = std::getenv("HOME");
    const fs::path root = cache && *cache ? fs::path(cache)
                          : home          ? fs::path(home) / ".cache" / "kite"
                                          : fs::path();
    const fs::path cached = root / "real" / (id + ".gguf");
    return !root.empty() && fs::exists(cached) ? cached.string() : std::string();
}

}  // namespace kite::test
