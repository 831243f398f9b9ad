#include "tokenizer/byte_unicode.h"

#include <array>

#include "core/utf8.h"

namespace kite {

namespace {

// Printable Latin-1 bytes stand for themselves; the others (controls, space, DEL, NBSP,
// soft hyphen) take the code points from U+0100 upwards, in byte order.
bool stands_for_itself(int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct ByteMap {
    std::array<uint32_t, 256> code_point{};
    std::array<std::string, 256> utf8;
    std::array<int16_t, 512> byte_of{};  // every mapped code point is below U+0200

    ByteMap() {
        byte_of.fill(-1);
        uint32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            const uint32_t cp = stands_for_itself(b) ? uint32_t(b) : next++;
            code_point[b] = cp;
            append_utf8(cp, utf8[b]);
            byte_of[cp] = static_cast<int16_t>(b);
        }
    }
};

const ByteMap& byte_map() {
    static const ByteMap map;
    return map;
}

}  // namespace

std::string_view byte_to_unicode(uint8_t byte) {
    return byte_map().utf8[byte];
}

std::optional<uint8_t> unicode_to_byte(uint32_t code_point) {
    if (code_point >= byte_map().byte_of.size()) return std::nullopt;
    const int16_t b = byte_map().byte_of[code_point];
    if (b < 0) return std::nullopt;
    return static_cast<uint8_t>(b);
}

std::string bytes_to_unicode(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char c : bytes) out += byte_to_unicode(static_cast<uint8_t>(c));
    return out;
}

}  // namespace kite
