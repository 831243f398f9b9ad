#include "server/api_keys.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.h"

namespace kite::server {

namespace {

std::string_view trim(std::string_view s) {
    const size_t begin = s.find_first_not_of(" \t\r");
    if (begin == std::string_view::npos) return {};
    return s.substr(begin, s.find_last_not_of(" \t\r") - begin + 1);
}

// No early exit on the first differing byte: the time taken says nothing of how much of a
// guess was right.
bool same_key(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

}  // namespace

std::vector<std::string> read_api_key_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) fail("cannot read the API key file '{}': {}", path, std::strerror(errno));
    std::vector<std::string> keys;
    std::string line;
    while (std::getline(in, line)) {
        const std::string_view key = trim(line);
        if (!key.empty() && key.front() != '#') keys.emplace_back(key);
    }
    if (in.bad()) fail("cannot read the API key file '{}': {}", path, std::strerror(errno));
    if (keys.empty()) fail("the API key file '{}' holds no key", path);
    return keys;
}

ApiKeys::ApiKeys(std::string key, std::vector<std::string> file_keys)
    : key_(std::move(key)),
      enabled_(!key_.empty() || !file_keys.empty()),
      file_keys_(std::make_shared<const std::vector<std::string>>(std::move(file_keys))) {}

bool ApiKeys::accepts(std::string_view presented) const {
    if (!key_.empty() && same_key(presented, key_)) return true;
    std::shared_ptr<const std::vector<std::string>> keys;
    {
        std::lock_guard lock(mutex_);
        keys = file_keys_;
    }
    if (!keys) return false;
    bool found = false;
    for (const std::string& k : *keys) found |= same_key(presented, k);
    return found;
}

void ApiKeys::replace_file_keys(std::vector<std::string> keys) {
    auto next = std::make_shared<const std::vector<std::string>>(std::move(keys));
    std::lock_guard lock(mutex_);
    file_keys_ = std::move(next);
}

size_t ApiKeys::file_key_count() const {
    std::lock_guard lock(mutex_);
    return file_keys_ ? file_keys_->size() : 0;
}

}  // namespace kite::server
