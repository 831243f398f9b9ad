// GPT-2's reversible byte <-> character map: byte-level BPE vocabularies spell every byte as
// a printable character, so that whitespace and control bytes can live inside tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kite {

// The UTF-8 of the character that stands for `byte` in a byte-level vocabulary.
std::string_view byte_to_unicode(uint8_t byte);

// The byte a character stands for; nullopt for a character outside the map.
std::optional<uint8_t> unicode_to_byte(uint32_t code_point);

// Spells raw bytes the way a byte-level vocabulary does.
std::string bytes_to_unicode(std::string_view bytes);

}  // namespace kite
