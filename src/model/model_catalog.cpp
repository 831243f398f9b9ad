#include "model/model_catalog.h"

#include <cstdlib>

namespace kite {

namespace fs = std::filesystem;

namespace {

// The same list as the install script's catalog; a test checks that the two agree.
constexpr InstallableModel kModels[] = {
    {"smollm2-135m", "98 MB", "SmolLM2-135M-Instruct, llama, Q4_1 (the default model)"},
    {"qwen2.5-coder-0.5b", "491 MB", "Qwen2.5-Coder-0.5B-Instruct, qwen2, Q4_K_M"},
    {"qwen2.5-coder-1.5b", "1.1 GB", "Qwen2.5-Coder-1.5B-Instruct, qwen2, Q4_K_M"},
    {"gemma3-270m", "253 MB", "Gemma 3 270M (base model, no chat template), gemma3, Q4_K_M"},
    {"nomic-embed-v1.5", "274 MB", "nomic-embed-text-v1.5, nomic-bert (embeddings), F16"},
    {"all-minilm-l6-v2", "46 MB",
     "all-MiniLM-L6-v2, bert (embeddings), F16 converted from safetensors"},
};

// The repository root: two levels above build/bin/kite, else where this was compiled (the
// Python module runs inside the python executable).
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

std::span<const InstallableModel> installable_models() {
    return kModels;
}

const InstallableModel* find_installable(std::string_view id) {
    for (const InstallableModel& m : kModels)
        if (m.id == id) return &m;
    return nullptr;
}

fs::path models_dir() {
    if (const char* env = std::getenv("KITE_MODELS_DIR"); env && *env) return env;
    return repo_root() / "models";
}

}  // namespace kite
