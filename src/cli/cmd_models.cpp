// `kite models`: the models installed in the models folder (id, architecture, file type, size,
// path) and the installable ones not installed yet, with the command that installs them.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "gguf/gguf_file.h"
#include "model/model_catalog.h"

namespace kite::cli {

namespace fs = std::filesystem;

namespace {

// general.file_type: the GGUF convention's numbering of whole-file weight mixes.
std::string file_type_name(std::optional<int64_t> type) {
    static constexpr std::pair<int64_t, std::string_view> kNames[] = {
        {0, "F32"},     {1, "F16"},     {2, "Q4_0"},    {3, "Q4_1"},    {7, "Q8_0"},
        {8, "Q5_0"},    {9, "Q5_1"},    {10, "Q2_K"},   {11, "Q3_K_S"}, {12, "Q3_K_M"},
        {13, "Q3_K_L"}, {14, "Q4_K_S"}, {15, "Q4_K_M"}, {16, "Q5_K_S"}, {17, "Q5_K_M"},
        {18, "Q6_K"},   {32, "BF16"}};
    if (!type) return "-";
    for (const auto& [value, name] : kNames)
        if (value == *type) return std::string(name);
    return fmt::format("type {}", *type);
}

std::string human_size(uintmax_t bytes) {
    if (bytes >= (uintmax_t{1} << 30)) return fmt::format("{:.2f} GiB", double(bytes) / (1 << 30));
    return fmt::format("{:.1f} MiB", double(bytes) / (1 << 20));
}

struct Installed {
    std::string id, architecture, file_type, size, path;
};

// A file that does not open as GGUF is still listed, with the reason in place of its details.
Installed describe(const fs::path& path) {
    Installed m{path.stem().string(), "", "", "", path.string()};
    std::error_code ec;
    const uintmax_t bytes = fs::file_size(path, ec);
    m.size = ec ? "-" : human_size(bytes);
    try {
        const auto file = GgufFile::open(path.string());
        m.architecture = std::string(file->get_string("general.architecture").value_or("-"));
        m.file_type = file_type_name(file->get_int("general.file_type"));
    } catch (const Error& e) {
        m.architecture = fmt::format("(unreadable: {})", e.what());
    }
    return m;
}

std::vector<fs::path> gguf_files(const fs::path& dir) {
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
        if (entry.path().extension() == ".gguf" && fs::is_regular_file(entry.path(), ec))
            files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    return files;
}

void list_models() {
    const fs::path dir = models_dir();
    std::vector<Installed> installed;
    for (const fs::path& p : gguf_files(dir)) installed.push_back(describe(p));

    fmt::print("installed in {}:\n", dir.string());
    if (installed.empty()) fmt::print("  (none)\n");
    // The id column fits the longest name (a requantized copy's, say), at least 20 wide.
    size_t id_width = 20;
    for (const Installed& m : installed) id_width = std::max(id_width, m.id.size());
    for (const Installed& m : installed)
        fmt::print("  {:<{}} {:<12} {:<7} {:>10}  {}\n", m.id, id_width, m.architecture,
                   m.file_type, m.size, m.path);

    std::vector<const InstallableModel*> missing;
    for (const InstallableModel& m : installable_models()) {
        const bool present = std::any_of(installed.begin(), installed.end(),
                                         [&](const Installed& i) { return i.id == m.id; });
        if (!present) missing.push_back(&m);
    }
    if (missing.empty()) return;
    fmt::print("installable (bash scripts/install-model.sh NAME, then kite ... -m NAME):\n");
    for (const InstallableModel* m : missing)
        fmt::print("  {:<20} {:>7}  {}\n", m->id, m->size, m->description);
}

}  // namespace

void add_models_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "models", "List the installed models and the ones scripts/install-model.sh can install");
    cmd->callback([] { list_models(); });
}

}  // namespace kite::cli
