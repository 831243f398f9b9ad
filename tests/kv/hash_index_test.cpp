#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

#include "kv/hash_index.h"

using namespace kite;

TEST(HashIndex, MatchesAMapUnderRandomInsertsAndErases) {
    // Hashes from a small set with equal low bits collide in long probe runs, so erasing
    // exercises the backward shift across runs and the table's wrap-around.
    std::mt19937_64 rng(11);
    HashIndex index(40);
    std::unordered_map<uint64_t, int32_t> model;
    for (int op = 0; op < 200000; ++op) {
        const uint64_t hash = (rng() % 64) << (op % 2 ? 0 : 20) | (rng() % 3 == 0 ? 0 : 7);
        if (rng() % 2) {
            const auto value = static_cast<int32_t>(rng() % 1000);
            const bool room = model.size() < 40;
            const bool added = index.insert(hash, value);
            ASSERT_EQ(added, room && !model.count(hash)) << "op " << op;
            if (added) model.emplace(hash, value);
        } else {
            index.erase(hash);
            model.erase(hash);
        }
        ASSERT_EQ(index.size(), static_cast<int64_t>(model.size()));
        const uint64_t probe = (rng() % 64) << (op % 3 ? 0 : 20) | 7;
        const auto it = model.find(probe);
        ASSERT_EQ(index.find(probe), it == model.end() ? -1 : it->second) << "op " << op;
    }
}
