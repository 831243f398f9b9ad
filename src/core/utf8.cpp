#include "core/utf8.h"

namespace kite {

namespace {

bool is_continuation(uint8_t b) {
    return (b & 0xC0) == 0x80;
}

// Bytes in the sequence a lead byte starts, or 0 when it cannot start one (continuation
// bytes, the overlong leads C0/C1, and F5..FF which would exceed U+10FFFF).
size_t sequence_length(uint8_t lead) {
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    return 0;
}

// The second byte carries the remaining range checks: E0 and F0 would be overlong below
// these bounds, ED would encode a surrogate, F4 would pass U+10FFFF.
bool second_byte_ok(uint8_t lead, uint8_t second) {
    switch (lead) {
        case 0xE0:
            return second >= 0xA0 && second <= 0xBF;
        case 0xED:
            return second >= 0x80 && second <= 0x9F;
        case 0xF0:
            return second >= 0x90 && second <= 0xBF;
        case 0xF4:
            return second >= 0x80 && second <= 0x8F;
        default:
            return is_continuation(second);
    }
}

}  // namespace

Utf8Sequence next_utf8_sequence(std::string_view bytes) {
    const auto lead = static_cast<uint8_t>(bytes[0]);
    const size_t length = sequence_length(lead);
    if (length == 0) return {Utf8Status::Invalid, 1};
    for (size_t i = 1; i < length; ++i) {
        if (i == bytes.size()) return {Utf8Status::Incomplete, i};
        const auto b = static_cast<uint8_t>(bytes[i]);
        const bool ok = i == 1 ? second_byte_ok(lead, b) : is_continuation(b);
        if (!ok) return {Utf8Status::Invalid, 1};
    }
    return {Utf8Status::Complete, length};
}

size_t valid_utf8_prefix(std::string_view bytes) {
    size_t pos = 0;
    while (pos < bytes.size()) {
        const Utf8Sequence seq = next_utf8_sequence(bytes.substr(pos));
        if (seq.status != Utf8Status::Complete) break;
        pos += seq.length;
    }
    return pos;
}

void append_utf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

uint32_t decode_utf8(std::string_view s) {
    const auto lead = static_cast<uint8_t>(s[0]);
    if (s.size() == 1) return lead;
    uint32_t cp = lead & (0x7F >> s.size());
    for (size_t i = 1; i < s.size(); ++i) cp = (cp << 6) | (static_cast<uint8_t>(s[i]) & 0x3F);
    return cp;
}

}  // namespace kite
