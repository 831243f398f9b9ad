// A read-only memory map of a whole file: model weights are used in place from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace kite {

class MappedFile {
  public:
    // Throws kite::Error naming the path if it cannot be opened or mapped.
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    std::span<const uint8_t> bytes() const { return {data_, size_}; }

    // Lets the kernel drop the resident pages of bytes [p, p + n) of the map (a copy of them
    // is kept elsewhere); reading them again pages them back in from the file.
    void drop_pages(const uint8_t* p, size_t n) const;
    const std::string& path() const { return path_; }

  private:
    std::string path_;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace kite
