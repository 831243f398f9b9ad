// The API keys `kite serve` accepts: --api-key and the keys of --api-key-file, which a
// SIGHUP reloads while requests are being checked. Any one of them is accepted.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace kite::server {

// The keys of a key file: one per line; blank lines and lines starting with '#' are
// skipped, and spaces around a key are not part of it. Throws kite::Error for a file that
// cannot be read or holds no key.
std::vector<std::string> read_api_key_file(const std::string& path);

class ApiKeys {
  public:
    ApiKeys() = default;
    // `key`: --api-key (empty: none); `file_keys`: the key file's.
    ApiKeys(std::string key, std::vector<std::string> file_keys);

    // False: no key is set, every request is accepted.
    bool enabled() const { return enabled_; }
    // Whether `presented` is one of the keys (compared in constant time per key).
    bool accepts(std::string_view presented) const;
    // Replaces the key file's keys (from any thread); --api-key stays.
    void replace_file_keys(std::vector<std::string> keys);
    size_t file_key_count() const;

  private:
    std::string key_;
    bool enabled_ = false;
    mutable std::mutex mutex_;
    std::shared_ptr<const std::vector<std::string>> file_keys_;
};

}  // namespace kite::server
