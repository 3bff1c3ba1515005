// LatencyHistogram: job latencies in fixed microsecond buckets, recorded from
// any thread without a lock and read as a snapshot for /metrics.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace strata {

// Upper bounds (inclusive, Prometheus `le`) in microseconds; one more bucket
// above the last bound counts everything slower.
inline constexpr std::array<uint64_t, 16> kLatencyBucketBoundsUs = {
    50,     100,    250,     500,     1'000,   2'500,     5'000,     10'000,
    25'000, 50'000, 100'000, 250'000, 500'000, 1'000'000, 2'500'000, 10'000'000};
inline constexpr size_t kLatencyBuckets = kLatencyBucketBoundsUs.size() + 1;

struct LatencySnapshot {
  // Per bucket, not cumulative; [kLatencyBuckets-1] is above every bound.
  std::array<uint64_t, kLatencyBuckets> counts{};
  uint64_t sum_us = 0;

  uint64_t count() const;
};

// Thread-safe. A snapshot taken while others record may miss the newest
// samples, but its count always equals the sum of its buckets.
class LatencyHistogram {
 public:
  void Record(uint64_t latency_us);
  LatencySnapshot Snapshot() const;

  // The bucket `latency_us` falls in.
  static size_t BucketOf(uint64_t latency_us);

 private:
  std::array<std::atomic<uint64_t>, kLatencyBuckets> counts_{};
  std::atomic<uint64_t> sum_us_{0};
};

}  // namespace strata
