#include "kernels/cpu/isa.h"

#include <array>
#include <atomic>
#include <cstdlib>

#include "core/error.h"
#include "kernels/cpu/cpu_features.h"

namespace kite {

namespace {

constexpr std::array<const char*, kIsaCount> kNames{"scalar", "avx2", "avxvnni", "avx512"};

Isa detect() {
    const CpuFeatures& f = cpu_features();
    if (f.avx512 && f.avx512_dq && f.avx512_vnni && f.avx2 && f.f16c) return Isa::Avx512;
    if (f.avx2 && f.f16c && (f.avx_vnni || (f.avx512 && f.avx512_vnni))) return Isa::AvxVnni;
    if (f.avx2 && f.f16c) return Isa::Avx2;
    return Isa::Scalar;
}

Isa cap_from_environment() {
    const char* v = std::getenv("KITE_ISA");
    if (!v || !*v) return Isa::Avx512;
    const std::optional<Isa> isa = parse_isa(v);
    if (!isa) fail("KITE_ISA={} is not one of scalar, avx2, avxvnni, avx512", v);
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

Isa active_isa() {
    const Isa c = cap().load(std::memory_order_relaxed);
    return c < detected_isa() ? c : detected_isa();
}

void set_isa_cap(Isa c) {
    if (c > detected_isa())
        fail("this CPU supports instruction sets up to {}, not {}", isa_name(detected_isa()),
             isa_name(c));
    cap().store(c, std::memory_order_relaxed);
}

}  // namespace kite
