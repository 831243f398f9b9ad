// Python's case mappings for the scripts chat messages commonly hold, as a table of ranges:
// each lowercase range maps onto an uppercase one, contiguously or as alternating pairs.
#include <array>

#include "template/py_string.h"

namespace kite::tmpl {

namespace {

struct CaseRange {
    uint32_t lower_first, lower_last;  // the lowercase letters, inclusive
    uint32_t upper_first;              // the uppercase letter of lower_first
    uint32_t stride;                   // 1: a contiguous block; 2: upper/lower pairs interleaved
};

constexpr std::array<CaseRange, 21> kCaseRanges{{
    {0x61, 0x7A, 0x41, 1},                               // a-z
    {0xE0, 0xF6, 0xC0, 1},                               // à-ö
    {0xF8, 0xFE, 0xD8, 1},                               // ø-þ
    {0xFF, 0xFF, 0x178, 1},                              // ÿ
    {0x101, 0x12F, 0x100, 2},                            // Latin Extended-A, even upper / odd lower
    {0x133, 0x137, 0x132, 2}, {0x13A, 0x148, 0x139, 2},  // odd upper / even lower
    {0x14B, 0x177, 0x14A, 2}, {0x17A, 0x17E, 0x179, 2},
    {0x3AC, 0x3AC, 0x386, 1},                            // Greek with tonos
    {0x3AD, 0x3AF, 0x388, 1}, {0x3B1, 0x3C1, 0x391, 1},  // α-ρ
    {0x3C2, 0x3C2, 0x3A3, 1},                            // final sigma
    {0x3C3, 0x3CB, 0x3A3, 1},                            // σ-ϋ
    {0x3CC, 0x3CC, 0x38C, 1}, {0x3CD, 0x3CE, 0x38E, 1},
    {0x430, 0x44F, 0x410, 1},  // Cyrillic а-я
    {0x450, 0x45F, 0x400, 1},  // ѐ-џ
    {0x461, 0x481, 0x460, 2}, {0x48B, 0x4BF, 0x48A, 2},
    {0x4D1, 0x4FF, 0x4D0, 2},
}};

uint32_t to_upper(uint32_t cp) {
    for (const CaseRange& r : kCaseRanges) {
        if (cp < r.lower_first || cp > r.lower_last) continue;
        if (r.stride == 2) return (cp - r.lower_first) % 2 == 0 ? cp - 1 : cp;
        return cp - r.lower_first + r.upper_first;
    }
    return cp;
}

uint32_t to_lower(uint32_t cp) {
    if (cp == 0x3A3) return 0x3C3;  // Σ lowers to σ, not to the final form
    for (const CaseRange& r : kCaseRanges) {
        if (r.stride == 2) {
            const uint32_t upper_last = r.lower_last - 1;
            if (cp >= r.upper_first && cp <= upper_last && (cp - r.upper_first) % 2 == 0)
                return cp + 1;
            continue;
        }
        const uint32_t upper_last = r.upper_first + (r.lower_last - r.lower_first);
        if (cp >= r.upper_first && cp <= upper_last) return cp - r.upper_first + r.lower_first;
    }
    return cp;
}

using Mapping = uint32_t (*)(uint32_t);

std::string map_code_points(std::string_view s, Mapping map) {
    std::string out;
    out.reserve(s.size());
    for (std::string_view cp : code_points(s)) {
        const uint32_t v = code_point_value(cp);
        const uint32_t mapped = map(v);
        if (mapped == v)
            out += cp;  // also keeps invalid bytes as they are
        else
            out += utf8_encode(mapped);
    }
    return out;
}

uint32_t swap(uint32_t cp) {
    return is_lower_letter(cp) ? to_upper(cp) : to_lower(cp);
}

}  // namespace

bool is_lower_letter(uint32_t cp) {
    return to_upper(cp) != cp;
}

bool is_upper_letter(uint32_t cp) {
    return to_lower(cp) != cp;
}

std::string py_upper(std::string_view s) {
    return map_code_points(s, to_upper);
}

std::string py_lower(std::string_view s) {
    return map_code_points(s, to_lower);
}

std::string py_swapcase(std::string_view s) {
    return map_code_points(s, swap);
}

// A letter after a cased letter lowers, any other uppers (so "they're" becomes "They'Re").
std::string py_title(std::string_view s) {
    std::string out;
    bool previous_cased = false;
    for (std::string_view cp : code_points(s)) {
        const uint32_t v = code_point_value(cp);
        const bool cased = is_lower_letter(v) || is_upper_letter(v);
        const uint32_t mapped = !cased ? v : previous_cased ? to_lower(v) : to_upper(v);
        out += mapped == v ? std::string(cp) : utf8_encode(mapped);
        previous_cased = cased;
    }
    return out;
}

std::string py_capitalize(std::string_view s) {
    const std::vector<std::string_view> cps = code_points(s);
    if (cps.empty()) return "";
    const size_t first = cps[0].size();
    return py_upper(s.substr(0, first)) + py_lower(s.substr(first));
}

}  // namespace kite::tmpl
