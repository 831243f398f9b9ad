// The instruction-set level the kernels run at: the best this CPU supports, capped by
// KITE_ISA (or set_isa_cap) so that a machine with AVX-512 can test and benchmark the
// AVX2 paths. Every kernel family picks its path from active_isa(), never from cpuid.
#pragma once

#include <optional>
#include <string_view>

namespace kite {

// Ordered: each level includes the ones below it.
enum class Isa {
    Scalar,   // the portable references
    Avx2,     // AVX2 + FMA + F16C (Haswell, Zen 1-3)
    AvxVnni,  // AVX2 plus 256-bit int8 dot products: AVX-VNNI (Alder Lake), or AVX-512 VNNI's
              // 256-bit form on CPUs that have AVX-512
    Avx512,   // AVX-512 F/BW/VL/DQ + VNNI + F16C (Ice Lake, Zen 4)
};
constexpr int kIsaCount = 4;

// "scalar", "avx2", "avxvnni", "avx512".
const char* isa_name(Isa isa);
std::optional<Isa> parse_isa(std::string_view name);

// The best level this CPU and OS support.
Isa detected_isa();

// min(detected_isa(), the cap): what the kernels use. The cap starts from KITE_ISA (an
// unknown value is an error on first use).
Isa active_isa();

// Caps the level (kite bench --isa). Fails if the CPU lacks `cap`. Not while kernels run:
// packed weights are laid out for the level active when they were packed.
void set_isa_cap(Isa cap);

}  // namespace kite
