// Running a test on each instruction set this CPU supports (kernels/cpu/isa.h).
#pragma once

#include <vector>

#include "kernels/cpu/isa.h"

namespace kite::test {

// Scalar, then every level up to the best this CPU has.
inline std::vector<Isa> supported_isas() {
    std::vector<Isa> isas;
    for (int i = 0; i <= static_cast<int>(detected_isa()); ++i) isas.push_back(static_cast<Isa>(i));
    return isas;
}

// Caps the instruction set while it lives. Load models after it: their weights are packed
// for the level active at load.
class ScopedIsaCap {
  public:
    explicit ScopedIsaCap(Isa cap) : previous_(active_isa()) { set_isa_cap(cap); }
    ~ScopedIsaCap() { set_isa_cap(previous_); }
    ScopedIsaCap(const ScopedIsaCap&) = delete;
    ScopedIsaCap& operator=(const ScopedIsaCap&) = delete;

  private:
    Isa previous_;
};

}  // namespace kite::test
