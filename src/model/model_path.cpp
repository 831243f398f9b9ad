#include <cstdlib>
#include <filesystem>

#include "model/model_path.h"

#include "core/error.h"
#include "model/model_catalog.h"

namespace kite {

namespace fs = std::filesystem;

namespace {

// A flag with a slash or a .gguf ending is meant as a path, even when nothing is there yet
// (the loader then names the file it cannot open).
bool looks_like_path(std::string_view flag) {
    return flag.find('/') != std::string_view::npos || flag.ends_with(".gguf");
}

std::string installable_ids() {
    std::string ids;
    for (const InstallableModel& m : installable_models())
        ids += (ids.empty() ? "" : ", ") + std::string(m.id);
    return ids;
}

// -m takes a path, or the name of a model in the models folder (models/NAME.gguf).
std::string resolve_model_flag(const std::string& flag) {
    std::error_code ec;
    if (fs::exists(flag, ec) || looks_like_path(flag)) return flag;
    const fs::path installed = models_dir() / (flag + ".gguf");
    if (fs::exists(installed, ec)) return installed.string();
    if (find_installable(flag))
        fail("model '{}' is not installed in '{}': run 'bash scripts/install-model.sh {}'", flag,
             models_dir().string(), flag);
    fail("'{}' is neither a model file nor an installed model (installable: {}; see 'kite models')",
         flag, installable_ids());
}

}  // namespace

std::string resolve_model_path(const std::string& flag) {
    if (!flag.empty()) return resolve_model_flag(flag);
    if (const char* env = std::getenv("KITE_MODEL"); env && *env) return env;
    fs::path def = models_dir() / "default.gguf";
    std::error_code ec;
    if (fs::exists(def, ec)) return def.string();
    fail(
        "no model given and the default model is not installed at '{}': run "
        "'bash scripts/install-model.sh' to install it, or pass -m PATH or -m NAME (or set "
        "KITE_MODEL)",
        def.string());
}

}  // namespace kite
