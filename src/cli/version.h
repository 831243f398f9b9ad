// What `kite --version` prints: the version, the commit it was built from, the compiler,
// and the instruction-set level the kernels run at on this CPU (a bug report's first lines).
#pragma once

#include <string>

namespace kite::cli {

// Several lines, each ending in '\n'. Throws kite::Error for a bad KITE_ISA.
std::string version_text();

}  // namespace kite::cli
