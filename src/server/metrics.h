// Server metrics in Prometheus' text format: request counts by HTTP status, token counters,
// latency histograms (time to first token, time per output token), and the engine's gauges
// (running and waiting sequences, KV blocks and bytes, prefix-cache hits), sampled by the engine
// thread. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace kite::server {

class Histogram {
  public:
    explicit Histogram(std::vector<double> bounds);
    void observe(double value);
    // Appends the _bucket, _sum and _count lines of metric `name`.
    void render(const std::string& name, std::string& out) const;

  private:
    std::vector<double> bounds_;
    std::vector<uint64_t> counts_;  // per bucket (not cumulative), the last is +Inf
    double sum_ = 0;
    uint64_t count_ = 0;
};

// What the engine thread reports after each step.
struct EngineGauges {
    int64_t running = 0;
    int64_t waiting = 0;
    int64_t kv_blocks_used = 0;
    int64_t kv_blocks_cached = 0;  // unused blocks kept for the prefix cache
    int64_t kv_blocks_total = 0;
    int64_t kv_bytes_per_token = 0;  // M_kv of one token in the cache's types (scales included)
    int64_t kv_bytes_total = 0;      // the KV cache's memory
    int64_t prefix_cache_queries = 0;
    int64_t prefix_cache_hits = 0;
    int64_t preemptions = 0;
    int64_t draft_tokens = 0;           // speculative decoding: draft tokens verified
    int64_t draft_accepted_tokens = 0;  // of those, tokens the model kept
    int64_t draft_kv_blocks_used = 0;   // the draft model's own KV cache
};

class Metrics {
  public:
    Metrics();

    void count_request(int status);
    void add_tokens(int64_t prompt, int64_t generated);
    void observe_ttft(double seconds);
    void observe_tpot(double seconds);
    void set_engine(const EngineGauges& g);
    EngineGauges engine() const;

    std::string render() const;

  private:
    mutable std::mutex mutex_;
    std::map<int, uint64_t> requests_;
    int64_t prompt_tokens_ = 0;
    int64_t generated_tokens_ = 0;
    Histogram ttft_, tpot_;
    EngineGauges engine_;
};

}  // namespace kite::server
