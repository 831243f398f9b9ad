#include "engine/ngram_drafter.h"

#include <algorithm>

#include "core/error.h"

namespace kite {

NgramDrafter::NgramDrafter(int64_t max_ngram, int64_t min_ngram)
    : max_ngram_(max_ngram), min_ngram_(min_ngram) {
    if (min_ngram < 1 || max_ngram < min_ngram)
        fail("n-gram lengths must satisfy 1 <= min <= max, got {}..{}", min_ngram, max_ngram);
}

void NgramDrafter::propose(std::span<const DraftRequest> requests) {
    for (const DraftRequest& r : requests) lookup(r.tokens, r.max_tokens, *r.out);
}

void NgramDrafter::lookup(std::span<const int32_t> tokens, int64_t max_tokens,
                          std::vector<int32_t>& out) const {
    out.clear();
    if (max_tokens <= 0) return;
    const auto size = static_cast<int64_t>(tokens.size());
    for (int64_t n = std::min(max_ngram_, size - 1); n >= min_ngram_; --n) {
        const auto tail = tokens.last(static_cast<size_t>(n));
        // Scan back from the latest earlier start, so the most recent match wins; the
        // continuation may run into the tail itself (a repeating pattern).
        for (int64_t start = size - n - 1; start >= 0; --start) {
            if (!std::equal(tail.begin(), tail.end(), tokens.begin() + start)) continue;
            const int64_t from = start + n;
            const int64_t count = std::min(max_tokens, size - from);
            out.assign(tokens.begin() + from, tokens.begin() + from + count);
            return;
        }
    }
}

}  // namespace kite
