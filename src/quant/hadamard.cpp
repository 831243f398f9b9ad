#include "quant/hadamard.h"

#include <cmath>

namespace kite {

void hadamard32_blocks(float* x, int64_t n) {
    const float norm = 1.0f / std::sqrt(32.0f);
    for (float* b = x; b < x + n; b += 32) {
        // Butterflies of span 1, 2, 4, 8, 16: pairs (a, c) become (a + c, a - c).
        for (int span = 1; span < 32; span *= 2)
            for (int i = 0; i < 32; i += 2 * span)
                for (int j = i; j < i + span; ++j) {
                    const float a = b[j], c = b[j + span];
                    b[j] = a + c, b[j + span] = a - c;
                }
        for (int j = 0; j < 32; ++j) b[j] *= norm;
    }
}

}  // namespace kite
