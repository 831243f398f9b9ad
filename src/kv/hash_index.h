// A fixed-capacity map from 64-bit hashes to block ids: open addressing with linear probing,
// sized once, so inserting and erasing never allocate (the prefix cache names a block every
// block_size tokens of every running sequence, inside decode steps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kite {

class HashIndex {
  public:
    // Room for `capacity` entries; the table keeps at least half of its slots empty.
    explicit HashIndex(int64_t capacity);

    int32_t find(uint64_t hash) const;  // the value, or -1
    // Adds hash -> value (value >= 0) unless hash is present; false when it was, or when
    // the index is full.
    bool insert(uint64_t hash, int32_t value);
    void erase(uint64_t hash);
    int64_t size() const { return size_; }

  private:
    struct Slot {
        uint64_t hash = 0;
        int32_t value = -1;  // -1: empty
    };
    size_t home(uint64_t hash) const { return static_cast<size_t>(hash) & mask_; }
    size_t slot_of(uint64_t hash) const;  // its slot, or the empty slot ending its probe

    std::vector<Slot> slots_;
    size_t mask_;
    int64_t capacity_;
    int64_t size_ = 0;
};

}  // namespace kite
