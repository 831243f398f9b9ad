#include "kernels/cpu/amx_state.h"

#include "kernels/cpu/cpu_features.h"

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#endif

namespace kite {

namespace {

#if defined(__linux__) && defined(__x86_64__)
// From the kernel's uapi asm/prctl.h (not in every libc's headers).
constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr unsigned long kXfeatureTileData = 18;

std::string ask_the_kernel() {
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureTileData) != 0)
        return std::string("the Linux kernel refused the tile state (arch_prctl: ") +
               std::strerror(errno) + ")";
    unsigned long granted = 0;
    if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &granted) != 0 ||
        !(granted & (1ul << kXfeatureTileData)))
        return "the Linux kernel did not grant the tile state";
    return "";
}
#else
std::string ask_the_kernel() {
    return "AMX needs Linux on x86-64";
}
#endif

std::string detect() {
    const CpuFeatures& f = cpu_features();
    if (!f.amx_tile || !f.amx_int8) return "this CPU (or its OS) has no AMX int8 tiles";
    return ask_the_kernel();
}

}  // namespace

const std::string& amx_refusal() {
    static const std::string reason = detect();
    return reason;
}

}  // namespace kite
