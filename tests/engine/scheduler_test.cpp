// The scheduler and the block pool without a model: continuous batching within the token
// budget and max_running, preemption when blocks run out, prefix-cache hits, LRU eviction,
// and block accounting. A "forward pass" here only advances n_computed and appends a token.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "engine/scheduler.h"
#include "kv/block_pool.h"
#include "kv/prefix_cache.h"

namespace kite {
namespace {

constexpr int64_t kBlock = 4;

std::unique_ptr<Sequence> make_seq(int64_t id, int64_t n_prompt, int32_t first_token = 1) {
    auto s = std::make_unique<Sequence>();
    s->id = id;
    for (int64_t i = 0; i < n_prompt; ++i) s->tokens.push_back(first_token + int32_t(i));
    s->n_prompt = n_prompt;
    return s;
}

// Runs the chunks as the engine would; sequences reaching max_tokens finish.
void run_step(Scheduler& sched, const std::vector<ScheduledChunk>& chunks, int64_t max_tokens) {
    for (const ScheduledChunk& c : chunks) {
        Sequence& s = *c.seq;
        ASSERT_GE(static_cast<int64_t>(s.block_table.size()) * kBlock, s.n_computed + c.n_tokens);
        s.n_computed += c.n_tokens;
        sched.publish_full_blocks(s);
        if (s.n_computed != static_cast<int64_t>(s.tokens.size())) continue;
        s.tokens.push_back(1000 + int32_t(s.n_generated));
        if (++s.n_generated >= max_tokens) {
            s.finish = FinishReason::MaxTokens;
            sched.finish(s, false);
        }
    }
}

TEST(PrefixCacheTest, ChainedHashesNameWholePrefixes) {
    const std::vector<int32_t> a{1, 2, 3, 4}, b{1, 2, 3, 5};
    const uint64_t ha = PrefixCache::chain_hash(PrefixCache::kRootHash, a);
    EXPECT_EQ(ha, PrefixCache::chain_hash(PrefixCache::kRootHash, a));
    EXPECT_NE(ha, PrefixCache::chain_hash(PrefixCache::kRootHash, b));
    // The same block after a different prefix is a different block.
    EXPECT_NE(PrefixCache::chain_hash(ha, a), PrefixCache::chain_hash(PrefixCache::kRootHash, a));
}

TEST(PrefixCacheTest, UnusedCachedBlocksAreEvictedLeastRecentlyUsedFirst) {
    BlockPool pool(3, true);
    const int32_t x = pool.allocate(), y = pool.allocate(), z = pool.allocate();
    pool.publish(x, 11);
    pool.publish(y, 22);
    EXPECT_EQ(pool.allocate(), -1);
    EXPECT_EQ(pool.n_used(), 3);
    pool.release(y);  // y, then x become unused but stay cached: y is the older
    pool.release(x);
    pool.release(z);  // z has no name: plain free
    EXPECT_EQ(pool.n_used(), 0);
    EXPECT_EQ(pool.n_cached_free(), 2);
    // A hit takes a reference and protects the block from eviction.
    EXPECT_EQ(pool.acquire_cached(11), x);
    EXPECT_EQ(pool.ref_count(x), 1);
    EXPECT_EQ(pool.acquire_cached(33), -1);
    EXPECT_EQ(pool.allocate(), z);  // plain free blocks go first
    EXPECT_EQ(pool.allocate(), y);  // then the least recently used cached one, forgotten
    EXPECT_EQ(pool.acquire_cached(22), -1);
    EXPECT_EQ(pool.allocate(), -1);
    // Shared by reference count: released by both users before it is evictable.
    pool.add_ref(x);
    pool.release(x);
    EXPECT_EQ(pool.n_cached_free(), 0);
    pool.release(x);
    EXPECT_EQ(pool.n_cached_free(), 1);
    // A second block with the same contents does not replace the cached one.
    pool.publish(y, 11);
    pool.release(y);
    EXPECT_EQ(pool.acquire_cached(11), x);
}

TEST(PrefixCacheTest, DisabledCacheFreesBlocksAtOnce) {
    BlockPool pool(2, false);
    const int32_t b = pool.allocate();
    pool.publish(b, 7);
    pool.release(b);
    EXPECT_EQ(pool.acquire_cached(7), -1);
    EXPECT_EQ(pool.n_cached_free(), 0);
    EXPECT_EQ(pool.n_free(), 2);
}

TEST(SchedulerTest, DecodesFirstThenChunkedPrefillsWithinBudgetAndMaxRunning) {
    BlockPool pool(64);
    Scheduler sched(pool, kBlock, 10, 2);
    auto a = make_seq(0, 3), b = make_seq(1, 12), c = make_seq(2, 5);
    sched.add(*a), sched.add(*b), sched.add(*c);
    std::vector<ScheduledChunk> out;
    sched.schedule(out);
    // a's whole prompt, then 7 of b's 12 tokens; c waits (max_running 2).
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].seq, a.get());
    EXPECT_EQ(out[0].n_tokens, 3);
    EXPECT_EQ(out[1].n_tokens, 7);
    EXPECT_EQ(sched.n_running(), 2);
    EXPECT_EQ(sched.n_waiting(), 1);
    run_step(sched, out, 100);
    sched.schedule(out);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].seq, a.get());  // the decode comes first
    EXPECT_EQ(out[0].n_tokens, 1);
    EXPECT_EQ(out[1].seq, b.get());
    EXPECT_EQ(out[1].n_tokens, 5);
}

TEST(SchedulerTest, PreemptsTheNewestWhenBlocksRunOutAndEveryoneFinishes) {
    for (bool caching : {false, true}) {
        BlockPool pool(8, caching);  // 32 token slots
        Scheduler sched(pool, kBlock, 64, 8);
        std::vector<std::unique_ptr<Sequence>> seqs;
        for (int64_t i = 0; i < 4; ++i) seqs.push_back(make_seq(i, 6, int32_t(100 * i)));
        for (auto& s : seqs) sched.add(*s);
        std::vector<ScheduledChunk> out;
        int steps = 0;
        while (!sched.idle() && steps++ < 500) {
            sched.schedule(out);
            ASSERT_FALSE(out.empty());
            // Every scheduled sequence holds blocks for what it computes; no block twice
            // unless shared through the cache.
            run_step(sched, out, 12);  // each needs 18 tokens = 5 blocks; 4 need 20 > 8
            ASSERT_LE(pool.n_used(), pool.n_blocks());
        }
        ASSERT_TRUE(sched.idle()) << "caching " << caching;
        EXPECT_GT(sched.stats().preemptions, 0);
        for (auto& s : seqs) {
            EXPECT_EQ(s->n_generated, 12);
            EXPECT_TRUE(s->block_table.empty());
        }
        EXPECT_EQ(pool.n_used(), 0);
        EXPECT_EQ(pool.n_free(), 8);
    }
}

TEST(SchedulerTest, PrefixHitsSkipPrefillAndLeaveTheLastTokenToCompute) {
    BlockPool pool(16, true);
    Scheduler sched(pool, kBlock, 64, 4);
    auto first = make_seq(0, 10);  // blocks [1..4] [5..8] full, [9 10] partial
    sched.add(*first);
    std::vector<ScheduledChunk> out;
    while (!sched.idle()) sched.schedule(out), run_step(sched, out, 2);
    EXPECT_EQ(pool.n_used(), 0);
    // 11 tokens computed (the last sampled one never is): two full blocks stay cached.
    EXPECT_EQ(pool.n_cached_free(), 2);
    EXPECT_EQ(sched.stats().prefix_hits, 0);

    // Same 10-token prompt: two full blocks are hits; the rest is computed.
    auto again = make_seq(1, 10);
    sched.add(*again);
    sched.schedule(out);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(again->n_computed, 8);
    EXPECT_EQ(out[0].n_tokens, 2);
    EXPECT_EQ(sched.stats().prefix_hits, 8);
    EXPECT_EQ(sched.stats().prefix_queries, 20);

    // A prompt of exactly two blocks: only the first is taken, the last token is computed.
    auto exact = make_seq(2, 8);
    sched.add(*exact);
    sched.schedule(out);
    EXPECT_EQ(exact->n_computed, 4);
    // Shared blocks are referenced by both sequences.
    EXPECT_EQ(again->block_table[0], exact->block_table[0]);
    EXPECT_EQ(pool.ref_count(again->block_table[0]), 2);
    sched.remove(*again);
    sched.remove(*exact);
    EXPECT_EQ(pool.n_used(), 0);
}

TEST(SchedulerTest, CancelledSequencesReleaseTheirBlocks) {
    BlockPool pool(16, true);
    Scheduler sched(pool, kBlock, 64, 4);
    auto a = make_seq(0, 9), b = make_seq(1, 3);
    sched.add(*a), sched.add(*b);
    std::vector<ScheduledChunk> out;
    sched.schedule(out);
    run_step(sched, out, 100);
    EXPECT_GT(pool.n_used(), 0);
    sched.remove(*a);
    sched.remove(*b);
    EXPECT_TRUE(sched.idle());
    EXPECT_EQ(pool.n_used(), 0);
}

}  // namespace
}  // namespace kite
