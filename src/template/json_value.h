// JSON in and out of template values: contexts arrive as JSON, and `tojson` writes what
// Python's json.dumps writes with transformers' options (ensure_ascii off, ", " and ": "
// separators, or "," and newlines when indented, keys in insertion order).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "template/value.h"

namespace kite::tmpl {

Value from_json(const nlohmann::ordered_json& j);
nlohmann::ordered_json to_json_value(const Value& v);
// The text json.dumps writes for a dict key: str as it is; int, float, bool and None as their
// JSON; any other key raises, as in Python.
std::string json_key(const Value& key);
// json.dumps(v, ensure_ascii=False, indent=indent (negative: None), sort_keys=sort_keys).
std::string to_json(const Value& v, int indent, bool sort_keys);

}  // namespace kite::tmpl
