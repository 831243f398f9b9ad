#include "core/thread_pool.h"

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

void ThreadPool::run_share(int index) {
    int64_t chunk = (job_n_ + n_threads_ - 1) / n_threads_;
    int64_t begin = std::min(job_n_, chunk * index), end = std::min(job_n_, begin + chunk);
    if (begin < end) (*job_)(begin, end, index);
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn) {
    if (n_threads_ == 1 || n <= 1) {
        if (n > 0) fn(0, n, 0);
        return;
    }
    job_ = &fn;
    job_n_ = n;
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    {
        // The lock orders the job fields before the new generation for sleeping workers.
        std::lock_guard<std::mutex> lock(mutex_);
        generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    run_share(0);
    // A worker may have been descheduled (an oversubscribed machine): yield to let it run.
    for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
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
        if (generation_.load(std::memory_order_acquire) == seen) {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return generation_.load() != seen; });
        }
        seen = generation_.load(std::memory_order_acquire);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (stop_) return;
        }
        run_share(index);
        pending_.fetch_sub(1, std::memory_order_release);
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
