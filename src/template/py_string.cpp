#include "template/py_string.h"

#include <algorithm>

#include "template/error.h"

namespace kite::tmpl {

namespace {

size_t sequence_length(unsigned char lead) {
    if (lead < 0x80) return 1;
    if ((lead >> 5) == 0x6) return 2;
    if ((lead >> 4) == 0xE) return 3;
    if ((lead >> 3) == 0x1E) return 4;
    return 1;
}

bool is_ascii_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' ||
           (c >= 0x1c && c <= 0x1f);
}

}  // namespace

std::vector<std::string_view> code_points(std::string_view s) {
    std::vector<std::string_view> out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        size_t n = std::min(sequence_length(static_cast<unsigned char>(s[i])), s.size() - i);
        for (size_t k = 1; k < n; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) n = 1;
        out.push_back(s.substr(i, n));
        i += n;
    }
    return out;
}

size_t code_point_count(std::string_view s) {
    size_t n = 0;
    for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

bool is_py_space(std::string_view cp) {
    if (cp.size() == 1) return is_ascii_space(cp[0]);
    // The non-ASCII code points Python's str.isspace() accepts.
    static constexpr std::string_view kSpaces[] = {"\u0085", "\u00a0", "\u1680", "\u2000", "\u2001",
                                                   "\u2002", "\u2003", "\u2004", "\u2005", "\u2006",
                                                   "\u2007", "\u2008", "\u2009", "\u200a", "\u2028",
                                                   "\u2029", "\u202f", "\u205f", "\u3000"};
    return std::find(std::begin(kSpaces), std::end(kSpaces), cp) != std::end(kSpaces);
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                     bool right) {
    const std::vector<std::string_view> cps = code_points(s);
    std::vector<std::string_view> set;
    if (chars) set = code_points(*chars);
    auto strippable = [&](std::string_view cp) {
        return chars ? std::find(set.begin(), set.end(), cp) != set.end() : is_py_space(cp);
    };
    size_t begin = 0, end = cps.size();
    if (left)
        while (begin < end && strippable(cps[begin])) ++begin;
    if (right)
        while (end > begin && strippable(cps[end - 1])) --end;
    if (begin == end) return "";
    const size_t from = static_cast<size_t>(cps[begin].data() - s.data());
    const size_t to = static_cast<size_t>(cps[end - 1].data() - s.data()) + cps[end - 1].size();
    return std::string(s.substr(from, to - from));
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t maxsplit) {
    std::vector<std::string> out;
    if (sep) {
        if (sep->empty()) template_fail("ValueError: empty separator");
        size_t at = 0;
        while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
            const size_t next = s.find(*sep, at);
            if (next == std::string_view::npos) break;
            out.emplace_back(s.substr(at, next - at));
            at = next + sep->size();
        }
        out.emplace_back(s.substr(at));
        return out;
    }
    // Runs of whitespace separate; leading and trailing whitespace yield nothing.
    const std::vector<std::string_view> cps = code_points(s);
    size_t i = 0;
    while (i < cps.size()) {
        while (i < cps.size() && is_py_space(cps[i])) ++i;
        if (i == cps.size()) break;
        const size_t from = static_cast<size_t>(cps[i].data() - s.data());
        if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
            out.emplace_back(py_strip(s.substr(from), std::nullopt, false, true));
            break;
        }
        while (i < cps.size() && !is_py_space(cps[i])) ++i;
        const size_t to = i < cps.size() ? static_cast<size_t>(cps[i].data() - s.data()) : s.size();
        out.emplace_back(s.substr(from, to - from));
    }
    return out;
}

namespace {

// rsplit(None, maxsplit): words from the end; what is left keeps its leading whitespace.
std::vector<std::string> rsplit_whitespace(std::string_view s, int64_t maxsplit) {
    const std::vector<std::string_view> cps = code_points(s);
    auto offset = [&](size_t i) {
        return i == cps.size() ? s.size() : size_t(cps[i].data() - s.data());
    };
    std::vector<std::string> out;
    size_t end = cps.size();
    while (true) {
        while (end > 0 && is_py_space(cps[end - 1])) --end;
        if (end == 0) break;
        if (static_cast<int64_t>(out.size()) == maxsplit) {
            out.emplace_back(s.substr(0, offset(end)));
            break;
        }
        size_t begin = end;
        while (begin > 0 && !is_py_space(cps[begin - 1])) --begin;
        out.emplace_back(s.substr(offset(begin), offset(end) - offset(begin)));
        end = begin;
    }
    std::reverse(out.begin(), out.end());
    return out;
}

}  // namespace

std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep,
                                   int64_t maxsplit) {
    if (maxsplit < 0) return py_split(s, sep, maxsplit);
    if (!sep) return rsplit_whitespace(s, maxsplit);
    if (sep->empty()) template_fail("ValueError: empty separator");
    std::vector<std::string> out;
    size_t end = s.size();
    while (static_cast<int64_t>(out.size()) < maxsplit) {
        if (end < sep->size()) break;
        const size_t at = s.rfind(*sep, end - sep->size());
        if (at == std::string_view::npos) break;
        out.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
        end = at;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
}

std::string py_replace(std::string_view s, std::string_view from, std::string_view to,
                       int64_t count) {
    std::string out;
    if (from.empty()) {
        // Python inserts `to` around every code point.
        int64_t done = 0;
        for (std::string_view cp : code_points(s)) {
            if (count < 0 || done++ < count) out += to;
            out += cp;
        }
        if (count < 0 || done < count) out += to;
        return out;
    }
    size_t at = 0;
    for (int64_t done = 0; count < 0 || done < count; ++done) {
        const size_t next = s.find(from, at);
        if (next == std::string_view::npos) break;
        out.append(s.substr(at, next - at));
        out.append(to);
        at = next + from.size();
    }
    out.append(s.substr(at));
    return out;
}

std::string html_escape(std::string_view s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&#34;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string py_str_repr(std::string_view s) {
    const bool has_single = s.find('\'') != std::string_view::npos;
    const char quote = has_single && s.find('"') == std::string_view::npos ? '"' : '\'';
    std::string out(1, quote);
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == quote || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (u < 0x20 || u == 0x7f) {
            out += fmt::format("\\x{:02x}", u);
        } else {
            out += c;
        }
    }
    out += quote;
    return out;
}

std::string py_ascii(std::string_view repr) {
    std::string out;
    for (std::string_view cp : code_points(repr)) {
        const uint32_t v = code_point_value(cp);
        if (v < 0x80)
            out += cp;
        else if (v < 0x100)
            out += fmt::format("\\x{:02x}", v);
        else if (v < 0x10000)
            out += fmt::format("\\u{:04x}", v);
        else
            out += fmt::format("\\U{:08x}", v);
    }
    return out;
}

}  // namespace kite::tmpl
