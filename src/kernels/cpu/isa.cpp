#include "kernels/cpu/isa.h"

#include <array>
#include <atomic>
#include <cstdlib>

#include "core/error.h"
#include "kernels/cpu/amx_state.h"
#include "kernels/cpu/cpu_features.h"

namespace kite {

namespace {

constexpr std::array<const char*, kIsaCount> kNames{"scalar", "avx2", "avxvnni", "avx512", "amx"};

Isa detect() {
    const CpuFeatures& f = cpu_features();
    const bool avx512 = f.avx512 && f.avx512_dq && f.avx512_vnni && f.avx2 && f.f16c;
    // Asking for the tile state here, once, before any kernel could run a tile instruction.
    if (avx512 && amx_refusal().empty()) return Isa::Amx;
    if (avx512) return Isa::Avx512;
    if (f.avx2 && f.f16c && (f.avx_vnni || (f.avx512 && f.avx512_vnni))) return Isa::AvxVnni;
    if (f.avx2 && f.f16c) return Isa::Avx2;
    return Isa::Scalar;
}

Isa cap_from_environment() {
    const char* v = std::getenv("KITE_ISA");
    if (!v || !*v) return Isa::Amx;
    const std::optional<Isa> isa = parse_isa(v);
    if (!isa) fail("KITE_ISA={} is not one of scalar, avx2, avxvnni, avx512, amx", v);
    // The other levels cap silently (a test may cap at a level the CPU lacks), but amx is
    // asked for by name only to use it: a machine that cannot says why.
    if (*isa == Isa::Amx && !amx_unavailable_reason().empty())
        fail("KITE_ISA=amx: {}", amx_unavailable_reason());
    return *isa;
}

std::atomic<Isa>& cap() {
    static std::atomic<Isa> c{cap_from_environment()};
    return c;
}

}  // namespace

const char* isa_name(Isa isa) {
    return kNames[static_cast<int>(isa)];
}

std::optional<Isa> parse_isa(std::string_view name) {
    for (int i = 0; i < kIsaCount; ++i)
        if (name == kNames[i]) return static_cast<Isa>(i);
    return std::nullopt;
}

Isa detected_isa() {
    static const Isa isa = detect();
    return isa;
}

std::string amx_unavailable_reason() {
    const CpuFeatures& f = cpu_features();
    if (!(f.avx512 && f.avx512_dq && f.avx512_vnni && f.avx2 && f.f16c))
        return "this CPU has no AVX-512 VNNI, which the amx level runs beside its tiles";
    return amx_refusal();
}

Isa active_isa() {
    const Isa c = cap().load(std::memory_order_relaxed);
    return c < detected_isa() ? c : detected_isa();
}

void set_isa_cap(Isa c) {
    if (c == Isa::Amx && c > detected_isa())
        fail("this CPU does not offer the amx level: {}", amx_unavailable_reason());
    if (c > detected_isa())
        fail("this CPU supports instruction sets up to {}, not {}", isa_name(detected_isa()),
             isa_name(c));
    cap().store(c, std::memory_order_relaxed);
}

}  // namespace kite
