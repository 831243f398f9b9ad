// One thread's buffer for the AMX kernels' converted weights: grown to the largest call and
// kept, and 64-byte aligned, because a tile row that straddles two cache lines loads at about
// half the speed (measured: a Q4_K matmul ran 1.3x faster with its buffer aligned).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kite {

class TileBuffer {
  public:
    // At least n bytes at a 64-byte boundary; what an earlier call wrote may be gone.
    uint8_t* bytes(size_t n) {
        if (storage_.size() < n + 63) storage_.resize(n + 63);
        return storage_.data() + (-reinterpret_cast<uintptr_t>(storage_.data()) & 63);
    }
    template <typename T>
    T* items(size_t n) {
        return reinterpret_cast<T*>(bytes(n * sizeof(T)));
    }

  private:
    std::vector<uint8_t> storage_;
};

}  // namespace kite
