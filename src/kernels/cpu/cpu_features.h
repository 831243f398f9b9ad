// What this CPU and its OS support, read once from cpuid (and xgetbv for the register
// state). Kernels pick their SIMD path from it at run time.
#pragma once

namespace kite {

struct CpuFeatures {
    bool f16c = false;    // half <-> float conversion
    bool avx2 = false;    // with FMA
    bool avx512 = false;  // F, BW, VL
    bool avx512_dq = false;
    bool avx512_vnni = false;  // int8 dot, 512-bit
    bool avx512_bf16 = false;  // bf16 dot, 512-bit
    bool avx_vnni = false;     // int8 dot, 256-bit (VEX)
    // AMX tiles (cpuid) with their register state enabled by the OS (XCR0). Linux still
    // grants the tile data per process on request: amx_refusal() (amx_state.h) asks.
    bool amx_tile = false;
    bool amx_int8 = false;  // tdpbusd and its signed/unsigned variants
    bool amx_bf16 = false;  // tdpbf16ps
};

const CpuFeatures& cpu_features();

}  // namespace kite
