// The instruction-set level the kernels run at: the best this CPU supports, capped by
// KITE_ISA (or set_isa_cap) so that a machine with AVX-512 can test and benchmark the
// AVX2 paths. Every kernel family picks its path from active_isa(), never from cpuid.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kite {

// Ordered: each level includes the ones below it.
enum class Isa {
    Scalar,   // the portable references
    Avx2,     // AVX2 + FMA + F16C (Haswell, Zen 1-3)
    AvxVnni,  // AVX2 plus 256-bit int8 dot products: AVX-VNNI (Alder Lake), or AVX-512 VNNI's
              // 256-bit form on CPUs that have AVX-512
    Avx512,   // AVX-512 F/BW/VL/DQ + VNNI + F16C (Ice Lake, Zen 4)
    Amx,      // AVX-512 plus AMX int8 tiles granted by the OS (Sapphire Rapids): prompt-sized
              // matmuls of quantized weights on tiles, the rest as Avx512
};
constexpr int kIsaCount = 5;

// "scalar", "avx2", "avxvnni", "avx512", "amx".
const char* isa_name(Isa isa);
std::optional<Isa> parse_isa(std::string_view name);

// The best level this CPU and OS support.
Isa detected_isa();

// min(detected_isa(), the cap): what the kernels use. The cap starts from KITE_ISA (an
// unknown value is an error on first use, and so is amx where this process cannot run it).
Isa active_isa();

// Why amx is not offered here ("" when it is): no tiles, or the kernel refused them.
std::string amx_unavailable_reason();

// Caps the level (kite bench --isa). Fails if the CPU lacks `cap`. Not while kernels run:
// packed weights are laid out for the level active when they were packed.
void set_isa_cap(Isa cap);

}  // namespace kite
