// Python's str operations on UTF-8 text: Python indexes strings by code point, and its
// strip()/split() treat Unicode whitespace specially, so templates that slice or split
// message text need the same rules to render the same bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"

namespace kite::tmpl {

// The code points of `s`, each as its UTF-8 bytes (invalid bytes stand alone).
std::vector<std::string_view> code_points(std::string_view s);
size_t code_point_count(std::string_view s);

// One code point's number (a stray byte stands for itself) and its UTF-8 bytes.
inline uint32_t code_point_value(std::string_view code_point) {
    return decode_utf8(code_point);
}
inline std::string utf8_encode(uint32_t code_point) {
    std::string out;
    append_utf8(code_point, out);
    return out;
}

bool is_py_space(std::string_view code_point);
// str.strip/lstrip/rstrip: whitespace, or any code point in `chars` when given.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                     bool right);
// str.split(sep=None, maxsplit=-1) and str.rsplit.
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t maxsplit);
std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep,
                                   int64_t maxsplit);
std::string py_replace(std::string_view s, std::string_view from, std::string_view to,
                       int64_t count);
// Case mappings (py_case.cpp): ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic letters
// map one to one as Python maps them; other code points (and the few that Python maps to
// several, such as 'ß'.upper() == 'SS') are left as they are.
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);
std::string py_capitalize(std::string_view s);
std::string py_swapcase(std::string_view s);
// Whether a code point is a lowercase or uppercase letter (one with a mapping above).
bool is_lower_letter(uint32_t cp);
bool is_upper_letter(uint32_t cp);
// markupsafe's escape(): & < > " ' as HTML entities.
std::string html_escape(std::string_view s);
// Python's repr() of a str: single quotes unless the text holds ' and no ".
std::string py_str_repr(std::string_view s);
// Python's ascii(): repr() with the non-ASCII code points escaped (\xe9, \u2028, ...).
std::string py_ascii(std::string_view repr);

}  // namespace kite::tmpl
