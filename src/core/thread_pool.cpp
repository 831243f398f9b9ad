#include "core/thread_pool.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kite {

namespace {

void cpu_relax() {
#if defined(__x86_64__)
    _mm_pause();
#endif
}

// About 50 microseconds of spinning: long enough to catch the next job of a decode step,
// short enough not to steal the core from other processes when idle.
constexpr int kSpinsBeforeSleep = 2000;
constexpr int kSpinsBeforeYield = 2000;

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
        generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_chunks(int index) {
    for (;;) {
        const int64_t begin = next_.fetch_add(chunk_, std::memory_order_relaxed);
        if (begin >= job_n_) return;
        job_.call(job_.fn, begin, std::min(job_n_, begin + chunk_), index);
    }
}

void ThreadPool::run(int64_t n, ChunkFn fn) {
    if (n_threads_ == 1 || n <= 1) {
        if (n > 0) fn.call(fn.fn, 0, n, 0);
        return;
    }
    // About four chunks per thread: small enough to rebalance, few enough claims.
    job_ = fn;
    job_n_ = n;
    chunk_ = std::max<int64_t>(1, (n + 4 * n_threads_ - 1) / (4 * n_threads_));
    next_.store(0, std::memory_order_relaxed);
    open_.store(true);  // publishes the fields above to workers that see it open
    {
        // The lock orders the new generation before a sleeping worker's re-check.
        std::lock_guard<std::mutex> lock(mutex_);
        generation_.fetch_add(1);
    }
    wake_.notify_all();
    run_chunks(0);
    open_.store(false);
    // A worker may have been descheduled mid-chunk (an oversubscribed machine): let it run.
    for (int spins = 0; busy_.load() != 0; ++spins) {
        if (spins < kSpinsBeforeYield)
            cpu_relax();
        else
            std::this_thread::yield();
    }
}

void ThreadPool::worker(int index) {
    uint64_t seen = 0;
    for (;;) {
        int spins = 0;
        while (generation_.load(std::memory_order_acquire) == seen && spins < kSpinsBeforeSleep) {
            cpu_relax();
            spins++;
        }
        if (generation_.load() == seen) {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return generation_.load() != seen; });
        }
        seen = generation_.load();
        if (stop_.load()) return;
        // Join only an open job: once the caller has closed it and seen busy_ at zero, it
        // may return and reuse the fields. (Sequentially consistent: of "busy_ raised" and
        // "job closed", each side sees the other's store if it came first.)
        busy_.fetch_add(1);
        if (open_.load()) run_chunks(index);
        busy_.fetch_sub(1);
    }
}

int ThreadPool::default_threads() {
    // Count distinct (physical id, core id) pairs; hyper-threads share a core's FPUs.
    std::ifstream in("/proc/cpuinfo");
    std::set<std::pair<std::string, std::string>> cores;
    std::string line, physical = "0";
    while (std::getline(in, line)) {
        auto value = [&] { return line.substr(line.find(':') + 1); };
        if (line.rfind("physical id", 0) == 0) physical = value();
        if (line.rfind("core id", 0) == 0) cores.emplace(physical, value());
    }
    if (!cores.empty()) return static_cast<int>(cores.size());
    unsigned hw = std::thread::hardware_concurrency();
    return hw ? static_cast<int>(hw) : 1;
}

}  // namespace kite
