// Attention sinks and a sliding window without a model: the eviction policy against what it
// promises (the sinks and at least the last W tokens kept, at most a block more; chunks never
// span a slide), the scheduler growing a sequence far past its window on exactly
// KvWindow::peak_blocks blocks, prefix sharing and preemption; and the sinks' re-rotation
// against RoPE at the new position, for both RoPE styles and every KV type.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>

#include "engine/scheduler.h"
#include "kernels/ops/ops.h"
#include "kv/kv_cache.h"
#include "kv/kv_window.h"

namespace kite {
namespace {

struct WindowCase {
    int64_t window, sinks, block;
};
constexpr WindowCase kCases[] = {{1, 0, 4},   {5, 0, 4},    {5, 1, 4},    {16, 4, 4},
                                 {37, 4, 16}, {64, 0, 16},  {64, 16, 16}, {64, 20, 16},
                                 {20, 20, 4}, {100, 33, 16}};

TEST(KvWindowPolicy, KeepsTheSinksAndTheWindowAndSlidesAtBlockEdges) {
    for (const WindowCase c : kCases) {
        const KvWindow w{c.window, c.sinks};
        const int64_t bs = c.block;
        int64_t first = -1;
        for (int64_t m = 0; m < 20 * (c.window + bs); ++m) {
            const int64_t e = w.evicted(m, bs);
            ASSERT_GE(e, 0);
            if (e > 0 && first < 0) first = m;
            if (e > 0) {
                // Kept: sinks 0..S-1 and the window from S + e to m.
                const int64_t kept = m - (c.sinks + e) + 1;
                ASSERT_GE(kept, c.window) << c.window << " " << c.sinks << " m " << m;
                ASSERT_LT(kept, c.window + bs);
                ASSERT_EQ((c.sinks + e) % bs, 0);  // the window starts a block
            }
            const int64_t n = w.tokens_until_slide(m, bs);
            ASSERT_GE(n, 1);
            ASSERT_EQ(w.evicted(m + n - 1, bs), e);
            ASSERT_GT(w.evicted(m + n, bs), e);
        }
        EXPECT_EQ(w.first_slide(bs), first);
        // Cache positions: the sinks end where the window's first block begins.
        const int64_t e = w.evicted(first, bs), s = w.sink_blocks(bs);
        EXPECT_EQ(w.first_cached(e, bs) + c.sinks, s * bs);
        EXPECT_EQ(w.rope_offset(e, bs) + s * bs, c.sinks + e);
    }
    EXPECT_EQ(KvWindow{}.evicted(1 << 20, 16), 0);
}

std::unique_ptr<Sequence> windowed(int64_t id, int64_t n_prompt, KvWindow w, int32_t first = 1) {
    auto s = std::make_unique<Sequence>();
    s->id = id;
    for (int64_t i = 0; i < n_prompt; ++i) s->tokens.push_back(first + int32_t(i));
    s->n_prompt = n_prompt;
    s->window = w;
    return s;
}

// The engine's step: chunks never span a slide and have their blocks; a sequence finishes
// after max_tokens.
void run_step(Scheduler& sched, const std::vector<ScheduledChunk>& chunks, int64_t bs,
              int64_t max_tokens) {
    for (const ScheduledChunk& c : chunks) {
        Sequence& s = *c.seq;
        const KvWindow& w = s.window;
        ASSERT_EQ(w.evicted(s.n_computed, bs), s.window_state.evicted);
        ASSERT_EQ(w.evicted(s.n_computed + c.n_tokens - 1, bs), s.window_state.evicted);
        ASSERT_GE(static_cast<int64_t>(s.block_table.size()) * bs,
                  s.cache_position(s.n_computed, bs) + c.n_tokens);
        // The sink copies are the sequence's own blocks, never the sources.
        for (size_t i = 0; i < s.window_state.sink_sources.size(); ++i) {
            ASSERT_NE(s.block_table[i], s.window_state.sink_sources[i]);
        }
        s.window_state.sinks_stale = false;  // the engine rewrites them
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

TEST(KvWindowScheduler, RunsFarPastTheWindowOnItsPeakBlocks) {
    for (const WindowCase c : kCases)
        for (bool caching : {false, true}) {
            const KvWindow w{c.window, c.sinks};
            const int64_t bs = c.block, peak = w.peak_blocks(bs);
            BlockPool pool(peak, caching);
            Scheduler sched(pool, bs, 64, 1);
            auto s = windowed(0, 3 * c.window + 5, w);
            sched.add(*s);
            std::vector<ScheduledChunk> out;
            int64_t most = 0;
            while (!sched.idle()) {
                sched.schedule(out);
                ASSERT_FALSE(out.empty());
                run_step(sched, out, bs, 6 * c.window + 40);
                most = std::max(most, pool.n_used());
            }
            EXPECT_EQ(sched.stats().preemptions, 0) << c.window << " " << c.sinks;
            EXPECT_EQ(most, peak) << c.window << " " << c.sinks << " block " << bs;
            EXPECT_EQ(pool.n_used(), 0);
            EXPECT_TRUE(s->window_state.sink_sources.empty());
        }
}

// A windowed sequence shares a cached prompt: it takes cached blocks only up to its first
// slide, keeps the shared sink block as its source (only a reference), and offers nothing
// to the cache once it has evicted.
TEST(KvWindowScheduler, SharesCachedBlocksWithoutChangingOrPublishingAny) {
    const int64_t bs = 4;
    BlockPool pool(64, true);
    Scheduler sched(pool, bs, 64, 2);
    auto plain = windowed(0, 40, {});
    sched.add(*plain);
    std::vector<ScheduledChunk> out;
    while (!sched.idle()) sched.schedule(out), run_step(sched, out, bs, 2);
    const int64_t cached = pool.n_cached_free();
    ASSERT_EQ(cached, 10);  // 41 tokens computed: 10 full blocks

    const KvWindow w{8, 2};  // first slide at position 11
    auto s = windowed(1, 40, w);
    sched.add(*s);
    sched.schedule(out);
    EXPECT_EQ(s->n_computed, 8);  // 2 blocks, not 9
    const int32_t sink_block = s->block_table[0];
    EXPECT_EQ(pool.ref_count(sink_block), 1);
    run_step(sched, out, bs, 1000);
    while (s->n_generated < 30) {
        sched.schedule(out);
        run_step(sched, out, bs, 1000);
    }
    EXPECT_GT(s->window_state.evicted, 20);
    ASSERT_EQ(s->window_state.sink_sources.size(), 1u);
    EXPECT_EQ(s->window_state.sink_sources[0], sink_block);
    // Held: the source (shared, cached), the sink copy and the window blocks; nothing new
    // was cached, and the blocks it took from the cache are cached still.
    sched.remove(*s);
    EXPECT_EQ(pool.n_used(), 0);
    EXPECT_EQ(pool.n_cached_free(), cached);
    auto again = windowed(2, 40, {});
    sched.add(*again);
    sched.schedule(out);
    EXPECT_EQ(again->n_computed, 36);
    EXPECT_EQ(again->block_table[0], sink_block);
    sched.remove(*again);
}

// Windowed sequences on a pool too small for all of them: the newest are preempted, their
// windows and sink sources released, and recomputed; all finish and nothing stays held.
TEST(KvWindowScheduler, PreemptedWindowsReleaseEverythingAndFinish) {
    for (bool caching : {false, true}) {
        const int64_t bs = 4;
        const KvWindow w{12, 3};
        BlockPool pool(2 * w.peak_blocks(bs) - 1, caching);
        Scheduler sched(pool, bs, 64, 3);
        std::vector<std::unique_ptr<Sequence>> seqs;
        for (int64_t i = 0; i < 3; ++i) seqs.push_back(windowed(i, 30, w, int32_t(100 * i)));
        for (auto& s : seqs) sched.add(*s);
        std::vector<ScheduledChunk> out;
        int steps = 0;
        while (!sched.idle() && steps++ < 2000) {
            sched.schedule(out);
            ASSERT_FALSE(out.empty());
            run_step(sched, out, bs, 60);
        }
        ASSERT_TRUE(sched.idle());
        EXPECT_GT(sched.stats().preemptions, 0);
        for (auto& s : seqs) EXPECT_EQ(s->n_generated, 60);
        EXPECT_EQ(pool.n_used(), 0);
    }
}

// The reference: RoPE of x from scratch at `position` (what the forward pass stores).
std::vector<float> rotated_at(const std::vector<float>& x, const RopeParams& rope, int64_t heads,
                              int64_t head_dim, int64_t position) {
    std::vector<float> out = x;
    float cos_sin[kMaxRopeDims];
    rope_angles(rope, position, cos_sin);
    for (int64_t h = 0; h < heads; ++h)
        rope_rotate(out.data() + h * head_dim, cos_sin, rope.n_rot, rope.style);
    return out;
}

double rms(const std::vector<float>& a, const std::vector<float>& b) {
    double sum = 0;
    for (size_t i = 0; i < a.size(); ++i) sum += std::pow(double(a[i]) - (b.empty() ? 0 : b[i]), 2);
    return std::sqrt(sum / static_cast<double>(a.size()));
}

// A key written at position p and copied with a shift of delta equals the key written at
// p + delta: its error (RMS, against RoPE in float from scratch) is at most twice what the
// type's own rounding of that key is (the block types round twice: the write and the
// rewrite), for both RoPE styles, partial rotation, Llama 3 frequency factors and YaRN
// (whose magnitude must not be applied twice); values are copied as stored. Angles are
// floats, as the forward pass's are: at position P they are about P * 2^-24 off (1e-3 of
// the key at 40000), so the bound grows by 1e-7 of the key per position.
TEST(KvWindowSinks, ShiftedKeysEqualKeysRotatedAtTheNewPosition) {
    std::vector<float> factors(32);
    for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 0.25f * float(i % 5);
    RopeParams plain{.n_rot = 64, .freq_base = 10000.0f};
    RopeParams partial{.n_rot = 32, .freq_base = 500000.0f};
    RopeParams scaled{.n_rot = 64,
                      .freq_base = 1000000.0f,
                      .freq_scale = 0.25f,
                      .ext_factor = 1.0f,
                      .corr_low = 4.0f,
                      .corr_high = 20.0f,
                      .attn_factor = 1.2f,
                      .freq_factors = factors.data()};
    const KvCacheShape shape{2, 3, 64};
    const int64_t width = shape.n_kv_heads * shape.head_dim, p = 3, layer = 1;
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    // The block types store their keys calibrated (kv/key_calibration.h): a shift must undo
    // the calibration before it rotates and redo it after.
    KeyStatistics stats(shape.n_layers, shape.n_kv_heads, shape.n_kv_heads, shape.head_dim);
    for (int t = 0; t < 8; ++t)
        for (int64_t l = 0; l < shape.n_layers; ++l) {
            std::vector<float> q(width), k(width);
            for (int64_t j = 0; j < width; ++j)
                q[j] = normal(rng) * float(1 + j % 4), k[j] = float(j % 7) + normal(rng);
            stats.add(l, t, q.data(), k.data());  // t = 0: the first-position key
        }
    const KeyCalibration calibration = stats.calibration();
    for (RopeStyle style : {RopeStyle::Interleaved, RopeStyle::Halves})
        for (RopeParams rope : {plain, partial, scaled})
            for (const KvTypeInfo& t : kv_types())
                for (int64_t delta : {int64_t{1}, int64_t{16}, int64_t{1000}, int64_t{40000}}) {
                    rope.style = style;
                    KvCache kv(shape, t.type, 2, 16, calibration);
                    std::vector<float> x(width), v(width), got(width), direct(width);
                    for (float& e : x) e = normal(rng) * (&e - x.data() == 7 ? 8.0f : 2.0f);
                    for (float& e : v) e = normal(rng);
                    // The first sink: written at position 0, stored apart (key_calibration.h).
                    kv.write(layer, 5, 0, rotated_at(x, rope, 3, 64, p).data(), v.data());
                    kv.copy_rotated(layer, 5, 0, 20, rope, delta);
                    kv.read_keys(layer, 20, 1, got.data());
                    const std::vector<float> want = rotated_at(x, rope, 3, 64, p + delta);
                    kv.write(layer, 30, 1, want.data(), v.data());
                    kv.read_keys(layer, 30, 1, direct.data());
                    const double bound =
                        2 * rms(direct, want) + (1e-6 + 1e-7 * double(p + delta)) * rms(want, {});
                    EXPECT_LE(rms(got, want), bound)
                        << t.name << " n_rot " << rope.n_rot << " style " << int(style) << " delta "
                        << delta << " scaled " << (rope.freq_factors != nullptr);
                    const PagedKvRows values = kv.layer(layer).v;
                    EXPECT_EQ(std::memcmp(values.row(20, 0), values.row(5, 0),
                                          static_cast<size_t>(values.slot_bytes)),
                              0);
                }
}

}  // namespace
}  // namespace kite
