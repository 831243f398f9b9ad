// Whether this process may run AMX tile instructions. cpuid and XCR0 say the CPU has the tiles
// and the OS saves them, but Linux (5.16 on) hands a process the tile data state only when it
// asks (arch_prctl ARCH_REQ_XCOMP_PERM); the first tile instruction of a process that did not
// ask dies with SIGILL. The request is made once, the first time this is called.
#pragma once

#include <string>

namespace kite {

// Empty when AMX int8 tiles can run here; otherwise why not, in a few words.
const std::string& amx_refusal();

}  // namespace kite
