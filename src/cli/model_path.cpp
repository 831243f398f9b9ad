#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "cli/commands.h"
#include "core/error.h"

namespace kite::cli {

namespace fs = std::filesystem;

namespace {

// scripts/install-model.sh installs the default model here, relative to the repository root.
constexpr const char* kDefaultModel = "models/default.gguf";

// The repository root: two levels above build/bin/kite, else where this was compiled.
fs::path repo_root() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        fs::path root = exe.parent_path().parent_path().parent_path();
        if (fs::exists(root / "CMakeLists.txt", ec)) return root;
    }
    return KITE_SOURCE_DIR;
}

}  // namespace

std::string resolve_model_path(const std::string& flag) {
    if (!flag.empty()) return flag;
    if (const char* env = std::getenv("KITE_MODEL"); env && *env) return env;
    fs::path def = repo_root() / kDefaultModel;
    std::error_code ec;
    if (fs::exists(def, ec)) return def.string();
    fail(
        "no model given and the default model is not installed at '{}': run "
        "'bash scripts/install-model.sh' to install it, or pass -m PATH (or set KITE_MODEL)",
        def.string());
}

}  // namespace kite::cli
