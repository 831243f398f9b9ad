#include "kernels/cpu/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace kite {

namespace {

#if defined(__x86_64__)
CpuFeatures detect() {
    CpuFeatures f;
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const unsigned c1 = c;
    const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28);
    if (!osxsave || !avx) return f;
    unsigned xcr0_lo, xcr0_hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    const bool ymm_state = (xcr0_lo & 0x6) == 0x6;    // SSE and AVX registers saved by the OS
    const bool zmm_state = (xcr0_lo & 0xe6) == 0xe6;  // and the AVX-512 ones (opmask, zmm)
    if (!ymm_state || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
    f.f16c = (c1 & (1u << 29)) != 0;
    f.avx2 = fma && (b & (1u << 5));
    f.avx512_dq = (b & (1u << 17)) != 0;
    f.avx512 = zmm_state && (b & (1u << 16)) && (b & (1u << 30)) && (b & (1u << 31));
    f.avx512_vnni = f.avx512 && (c & (1u << 11));
    // XCR0 bits 17 and 18: the OS saves the tile configuration and the tile data.
    const bool tile_state = (xcr0_lo & 0x60000) == 0x60000;
    f.amx_tile = tile_state && (d & (1u << 24));
    f.amx_int8 = f.amx_tile && (d & (1u << 25));
    f.amx_bf16 = f.amx_tile && (d & (1u << 22));
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
        f.avx_vnni = f.avx2 && (a & (1u << 4));
        f.avx512_bf16 = f.avx512 && (a & (1u << 5));
    }
    return f;
}

#else
CpuFeatures detect() {
    return {};
}
#endif

}  // namespace

const CpuFeatures& cpu_features() {
    static const CpuFeatures f = detect();
    return f;
}

}  // namespace kite
