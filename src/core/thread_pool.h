// One persistent pool of worker threads. Work is split by index ranges; the calling thread
// takes part, so a pool of n threads runs n - 1 workers. Workers spin briefly between
// jobs (a decode step issues hundreds of small jobs) and then sleep.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kite {

class ThreadPool {
  public:
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // Calls fn(begin, end, thread_index) over [0, n) split into one contiguous range per
    // thread; returns when all are done. `fn` must not throw.
    void parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn);

    // Physical cores of this machine (falls back to the logical count).
    static int default_threads();

  private:
    void worker(int index);
    void run_share(int index);

    int n_threads_;
    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> pending_{0};
    bool stop_ = false;
    // The current job; written before generation_ is bumped.
    const std::function<void(int64_t, int64_t, int)>* job_ = nullptr;
    int64_t job_n_ = 0;
};

}  // namespace kite
