#include "model/pooling.h"

#include <algorithm>
#include <utility>

#include "kernels/ops/ops.h"

namespace kite {

void pool_rows(Pooling pooling, const float* rows, int64_t n, int64_t width, float* out) {
    if (pooling == Pooling::Cls || pooling == Pooling::Last) {
        const float* row = rows + (pooling == Pooling::Cls ? 0 : n - 1) * width;
        std::copy(row, row + width, out);
        return;
    }
    std::fill(out, out + width, 0.0f);
    for (int64_t r = 0; r < n; ++r) add_in_place(out, rows + r * width, width);
    for (int64_t i = 0; i < width; ++i) out[i] /= static_cast<float>(n);
}

std::optional<Pooling> pooling_from_name(std::string_view name) {
    constexpr std::pair<std::string_view, Pooling> kNames[] = {
        {"mean", Pooling::Mean}, {"cls", Pooling::Cls}, {"last", Pooling::Last}};
    for (const auto& [n, p] : kNames)
        if (n == name) return p;
    return std::nullopt;
}

}  // namespace kite
