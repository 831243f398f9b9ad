#include "grammar/utf8_ranges.h"

#include <algorithm>
#include <array>

namespace kite::grammar {

namespace {

constexpr std::array<uint32_t, 4> kMaxOfLength = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};

int encode(uint32_t cp, std::array<uint8_t, 4>& out) {
    if (cp < 0x80) {
        out[0] = static_cast<uint8_t>(cp);
        return 1;
    }
    if (cp < 0x800) {
        out[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
        out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
        out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
        out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
    out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 4;
}

// [lo, hi] within one encoding length. The range is split until, for every trailing byte
// position, it either keeps the bytes of lo and hi fixed above it or spans all 64 values, so
// the byte-wise ranges between encode(lo) and encode(hi) describe exactly the range.
void split_same_length(uint32_t lo, uint32_t hi, std::vector<ByteSequence>& out) {
    for (int i = 1; i < 4; ++i) {
        const uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) == (hi & ~m)) continue;
        if ((lo & m) != 0) {
            split_same_length(lo, lo | m, out);
            split_same_length((lo | m) + 1, hi, out);
            return;
        }
        if ((hi & m) != m) {
            split_same_length(lo, (hi & ~m) - 1, out);
            split_same_length(hi & ~m, hi, out);
            return;
        }
    }
    std::array<uint8_t, 4> a{}, b{};
    const int n = encode(lo, a);
    encode(hi, b);
    ByteSequence s;
    for (int k = 0; k < n; ++k) s.push_back({a[k], b[k]});
    out.push_back(std::move(s));
}

void split_range(uint32_t lo, uint32_t hi, std::vector<ByteSequence>& out) {
    if (lo > hi) return;
    if (lo <= 0xDFFF && hi >= 0xD800) {  // cut the surrogates out
        if (lo < 0xD800) split_range(lo, 0xD7FF, out);
        if (hi > 0xDFFF) split_range(0xE000, hi, out);
        return;
    }
    for (uint32_t max : kMaxOfLength) {
        if (lo <= max && hi > max) {
            split_range(lo, max, out);
            split_range(max + 1, hi, out);
            return;
        }
    }
    split_same_length(lo, hi, out);
}

}  // namespace

std::vector<ByteSequence> utf8_sequences(const std::vector<CodeRange>& ranges) {
    std::vector<ByteSequence> out;
    for (const CodeRange& r : ranges) split_range(r.lo, std::min(r.hi, kMaxCodePoint), out);
    return out;
}

}  // namespace kite::grammar
