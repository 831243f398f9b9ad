#include "cli/version.h"

#include <fmt/format.h>

#include "kernels/cpu/isa.h"

// Written at every build (cmake/commit_header.cmake): KITE_GIT_COMMIT.
#include "kite_commit.h"

// Set by CMake on this file only.
#ifndef KITE_VERSION
#define KITE_VERSION "unknown"
#endif
#ifndef KITE_COMPILER
#define KITE_COMPILER "unknown"
#endif

namespace kite::cli {

std::string version_text() {
    // The active level, which KITE_ISA may cap below what the CPU has: the one that runs.
    const Isa active = active_isa(), detected = detected_isa();
    const std::string kernels = active == detected
                                    ? isa_name(active)
                                    : fmt::format("{} (capped by KITE_ISA; the CPU has {})",
                                                  isa_name(active), isa_name(detected));
    return fmt::format("kite {}\ncommit: {}\ncompiler: {}\nkernels: {}\n", KITE_VERSION,
                       KITE_GIT_COMMIT, KITE_COMPILER, kernels);
}

}  // namespace kite::cli
