// One persistent pool of worker threads. A job is an index range cut into chunks that the
// threads claim one at a time, so a slow or descheduled thread (a shared machine) delays
// the job by one chunk at most: the others take the rest. The calling thread takes part, so
// a pool of n threads runs n - 1 workers. Workers spin briefly between jobs (a decode step
// issues hundreds of small jobs) and then sleep.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace kite {

class ThreadPool {
  public:
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // Calls fn(begin, end, thread_index) on chunks covering [0, n) exactly once; returns when
    // all are done. A thread may get several chunks or none; calls on one thread_index never
    // overlap. `fn` must not throw.
    template <typename Fn>
    void parallel_for(int64_t n, Fn&& fn) {
        run(n, ChunkFn{&fn, [](void* f, int64_t begin, int64_t end, int thread) {
                           (*static_cast<std::remove_reference_t<Fn>*>(f))(begin, end, thread);
                       }});
    }

    // Physical cores of this machine (falls back to the logical count).
    static int default_threads();

  private:
    // A borrowed callable: unlike std::function, wrapping a lambda never allocates (a decode
    // step issues hundreds of jobs).
    struct ChunkFn {
        void* fn;
        void (*call)(void* fn, int64_t begin, int64_t end, int thread);
    };

    void run(int64_t n, ChunkFn fn);
    void worker(int index);
    void run_chunks(int index);

    int n_threads_;
    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<uint64_t> generation_{0};  // bumped for each job (and to stop)
    std::atomic<bool> stop_{false};

    // The current job. A worker joins by raising busy_ and then checking that the job is
    // still open; the caller closes it when no chunk is left and waits for busy_ to drop to
    // zero, so no worker can touch a job's fields after parallel_for returns.
    ChunkFn job_{};
    int64_t job_n_ = 0;
    int64_t chunk_ = 1;
    std::atomic<int64_t> next_{0};
    std::atomic<bool> open_{false};
    std::atomic<int> busy_{0};
};

}  // namespace kite
