// Runs kernel tests on every instruction-set level this CPU supports, not just the best.
#pragma once

#include <vector>

#include "kernels/isa.h"

namespace kite {

// Scalar up to detected_isa().
inline std::vector<Isa> supported_isas() {
    std::vector<Isa> levels;
    for (int i = 0; i <= static_cast<int>(detected_isa()); ++i) levels.push_back(Isa(i));
    return levels;
}

// Caps the kernels at one level for a scope, then restores the level that was active.
class ScopedIsaCap {
  public:
    explicit ScopedIsaCap(Isa cap) : before_(active_isa()) { set_isa_cap(cap); }
    ~ScopedIsaCap() { set_isa_cap(before_); }
    ScopedIsaCap(const ScopedIsaCap&) = delete;
    ScopedIsaCap& operator=(const ScopedIsaCap&) = delete;

  private:
    Isa before_;
};

}  // namespace kite
