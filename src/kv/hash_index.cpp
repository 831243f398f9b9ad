#include "kv/hash_index.h"

namespace kite {

static size_t table_size(int64_t capacity) {
    size_t n = 8;
    while (n < 2 * static_cast<size_t>(capacity < 1 ? 1 : capacity)) n *= 2;
    return n;
}

HashIndex::HashIndex(int64_t capacity)
    : slots_(table_size(capacity)), mask_(slots_.size() - 1), capacity_(capacity) {}

size_t HashIndex::slot_of(uint64_t hash) const {
    size_t i = home(hash);
    while (slots_[i].value >= 0 && slots_[i].hash != hash) i = (i + 1) & mask_;
    return i;
}

int32_t HashIndex::find(uint64_t hash) const {
    return slots_[slot_of(hash)].value;
}

bool HashIndex::insert(uint64_t hash, int32_t value) {
    const size_t i = slot_of(hash);
    if (slots_[i].value >= 0 || size_ >= capacity_) return false;
    slots_[i] = {hash, value};
    size_++;
    return true;
}

void HashIndex::erase(uint64_t hash) {
    size_t hole = slot_of(hash);
    if (slots_[hole].value < 0) return;
    // Backward-shift deletion: pull later entries of the probe run into the hole unless their
    // home lies cyclically after the hole (they would become unreachable), so no tombstones.
    for (size_t j = (hole + 1) & mask_; slots_[j].value >= 0; j = (j + 1) & mask_) {
        const size_t h = home(slots_[j].hash);
        const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
        if (stays) continue;
        slots_[hole] = slots_[j];
        hole = j;
    }
    slots_[hole].value = -1;
    size_--;
}

}  // namespace kite
