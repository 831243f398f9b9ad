#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

using namespace kite;

namespace {

// Runs parallel_for(n) and returns how often each index was visited.
std::vector<int> visits(ThreadPool& pool, int64_t n) {
    std::vector<std::atomic<int>> count(n);
    std::atomic<bool> bad_thread{false};
    pool.parallel_for(n, [&](int64_t begin, int64_t end, int thread) {
        if (thread < 0 || thread >= pool.size() || begin >= end) bad_thread = true;
        for (int64_t i = begin; i < end; ++i) count[i]++;
    });
    EXPECT_FALSE(bad_thread);
    std::vector<int> out(n);
    for (int64_t i = 0; i < n; ++i) out[i] = count[i];
    return out;
}

}  // namespace

TEST(ThreadPool, EveryIndexRunsExactlyOnce) {
    for (int threads : {1, 2, 3, 4, 7})
        for (int64_t n : {0, 1, 2, 3, 7, 8, 9, 31, 100, 1001}) {
            ThreadPool pool(threads);
            for (int64_t i = 0; const int c : visits(pool, n))
                ASSERT_EQ(c, 1) << "threads " << threads << " n " << n << " index " << i++;
        }
}

TEST(ThreadPool, ManyBackToBackJobsLoseNothing) {
    // Decode issues hundreds of tiny jobs per token: a worker that is late for one job must
    // neither run a chunk of the next job twice nor miss one.
    ThreadPool pool(3);
    std::atomic<int64_t> sum{0};
    int64_t expected = 0;
    for (int job = 0; job < 20000; ++job) {
        const int64_t n = 1 + job % 13;
        pool.parallel_for(n, [&](int64_t begin, int64_t end, int) {
            for (int64_t i = begin; i < end; ++i) sum += i + 1;
        });
        expected += n * (n + 1) / 2;
    }
    EXPECT_EQ(sum.load(), expected);
}

TEST(ThreadPool, ASlowChunkDoesNotHoldTheOthers) {
    // One chunk sleeps; the other threads take every remaining chunk meanwhile.
    ThreadPool pool(2);
    std::atomic<int> done{0};
    pool.parallel_for(64, [&](int64_t begin, int64_t end, int) {
        if (begin == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        done += static_cast<int>(end - begin);
    });
    EXPECT_EQ(done.load(), 64);
}

TEST(ThreadPool, SleepingWorkersWakeForNewJobs) {
    ThreadPool pool(2);
    for (int round = 0; round < 3; ++round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // workers go to sleep
        EXPECT_EQ(visits(pool, 10), std::vector<int>(10, 1));
    }
}
