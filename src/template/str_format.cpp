#include "template/str_format.h"

#include <charconv>

#include "template/error.h"
#include "template/format_spec.h"
#include "template/py_string.h"
#include "template/renderer.h"

namespace kite::tmpl {

namespace {

// A replacement field split as Python splits it: {name!conversion:spec}.
struct Field {
    std::string_view name;
    char conversion = 0;
    std::string_view spec;
};

bool all_digits(std::string_view s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

int64_t to_index(std::string_view digits) {
    int64_t n = 0;
    if (std::from_chars(digits.data(), digits.data() + digits.size(), n).ec != std::errc())
        template_fail("ValueError: Too many decimal digits in format string");
    return n;
}

Field split_field(std::string_view text) {
    Field f;
    size_t at = 0;
    // '[' ... ']' may hold '!' or ':' as part of a key.
    for (bool bracket = false; at < text.size(); ++at) {
        if (text[at] == '[') bracket = true;
        if (text[at] == ']') bracket = false;
        if (!bracket && (text[at] == '!' || text[at] == ':')) break;
    }
    f.name = text.substr(0, at);
    if (at < text.size() && text[at] == '!') {
        if (at + 1 >= text.size())
            template_fail("ValueError: end of string while looking for conversion specifier");
        f.conversion = text[at + 1];
        at += 2;
        if (at < text.size() && text[at] != ':')
            template_fail("ValueError: expected ':' after conversion specifier");
    }
    if (at < text.size()) f.spec = text.substr(at + 1);
    return f;
}

class Formatter {
  public:
    Formatter(const CallArgs& args, const Value* mapping, Renderer& r)
        : args_(args), mapping_(mapping), r_(r) {}

    std::string run(std::string_view text, int depth) {
        std::string out;
        for (size_t at = 0; at < text.size();) {
            const char c = text[at];
            if (c == '}') {
                if (at + 1 >= text.size() || text[at + 1] != '}')
                    template_fail("ValueError: Single '}}' encountered in format string");
                out += '}';
                at += 2;
            } else if (c == '{' && at + 1 < text.size() && text[at + 1] == '{') {
                out += '{';
                at += 2;
            } else if (c == '{') {
                // A field in a spec is allowed; one in a spec's field, as in Python, is not.
                if (depth > 2) template_fail("ValueError: Max string recursion exceeded");
                const size_t end = closing_brace(text, at);
                out += replace(text.substr(at + 1, end - at - 1), depth);
                at = end + 1;
            } else {
                out += c;
                ++at;
            }
            r_.check_size(out.size());
        }
        return out;
    }

  private:
    // The '}' that closes the field opened at `open`, nested {} in its spec skipped.
    static size_t closing_brace(std::string_view text, size_t open) {
        int level = 0;
        for (size_t at = open; at < text.size(); ++at) {
            if (text[at] == '{') ++level;
            if (text[at] == '}' && --level == 0) return at;
        }
        template_fail("ValueError: Single '{{' encountered in format string");
    }

    std::string replace(std::string_view text, int depth) {
        const Field f = split_field(text);
        Value v = lookup(f.name);
        if (f.conversion == 'r')
            v = Value(to_repr(v));
        else if (f.conversion == 's')
            v = Value(to_str(v));
        else if (f.conversion == 'a')
            v = Value(py_ascii(to_repr(v)));
        else if (f.conversion)
            template_fail("ValueError: Unknown conversion specifier {}", f.conversion);
        const std::string spec = run(f.spec, depth + 1);
        return format_value(v, spec);
    }

    // The field's first name: a position, a keyword, or the next position when empty.
    Value argument(std::string_view first) {
        if (first.empty()) {
            if (manual_) numbering_clash("manual field specification", "automatic field numbering");
            automatic_ = true;
            return positional(next_++);
        }
        if (all_digits(first)) {
            if (automatic_)
                numbering_clash("automatic field numbering", "manual field specification");
            manual_ = true;
            return positional(to_index(first));
        }
        if (mapping_) {
            if (const Value* v = mapping_->dict().find(first)) return *v;
        } else {
            for (const auto& [key, value] : args_.keyword)
                if (key == first) return value;
        }
        template_fail("KeyError: '{}'", first);
    }

    Value positional(int64_t index) const {
        const std::vector<Value>& items = mapping_ ? kNone : args_.positional;
        if (index >= static_cast<int64_t>(items.size()))
            template_fail("IndexError: Replacement index {} out of range for positional args tuple",
                          index);
        return items[static_cast<size_t>(index)];
    }

    [[noreturn]] static void numbering_clash(const char* from, const char* to) {
        template_fail("ValueError: cannot switch from {} to {}", from, to);
    }

    // name, then .attribute and [key] parts, looked up as the sandbox looks them up.
    Value lookup(std::string_view name) {
        const size_t first_end = std::min(name.find_first_of(".["), name.size());
        Value v = argument(name.substr(0, first_end));
        for (size_t at = first_end; at < name.size();) {
            if (name[at] == '.') {
                const size_t end = std::min(name.find_first_of(".[", at + 1), name.size());
                const std::string_view attribute = name.substr(at + 1, end - at - 1);
                if (attribute.empty())
                    template_fail("ValueError: Empty attribute in format string");
                v = r_.get_attribute(v, std::string(attribute));
                at = end;
            } else if (name[at] == '[') {
                const size_t end = name.find(']', at);
                if (end == std::string_view::npos)
                    template_fail("ValueError: Missing ']' in format string");
                const std::string_view key = name.substr(at + 1, end - at - 1);
                if (key.empty()) template_fail("ValueError: Empty attribute in format string");
                v = r_.get_item(v, all_digits(key) ? Value(to_index(key)) : Value(key));
                at = end + 1;
                if (at < name.size() && name[at] != '.' && name[at] != '[')
                    template_fail(
                        "ValueError: Only '.' or '[' may follow ']' in format field specifier");
            } else {
                template_fail(
                    "ValueError: Only '.' or '[' may follow ']' in format field specifier");
            }
        }
        return v;
    }

    inline static const std::vector<Value> kNone;
    const CallArgs& args_;
    const Value* mapping_;
    Renderer& r_;
    int64_t next_ = 0;
    bool automatic_ = false;
    bool manual_ = false;
};

}  // namespace

std::string str_format(std::string_view format_string, const CallArgs& args, const Value* mapping,
                       Renderer& r) {
    return Formatter(args, mapping, r).run(format_string, 1);
}

}  // namespace kite::tmpl
