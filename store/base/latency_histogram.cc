#include "store/base/latency_histogram.h"

#include <algorithm>
#include <numeric>

namespace strata {

uint64_t LatencySnapshot::count() const {
  return std::accumulate(counts.begin(), counts.end(), uint64_t{0});
}

size_t LatencyHistogram::BucketOf(uint64_t latency_us) {
  return static_cast<size_t>(
      std::lower_bound(kLatencyBucketBoundsUs.begin(), kLatencyBucketBoundsUs.end(), latency_us) -
      kLatencyBucketBoundsUs.begin());
}

void LatencyHistogram::Record(uint64_t latency_us) {
  counts_[BucketOf(latency_us)].fetch_add(1, std::memory_order_relaxed);
  sum_us_.fetch_add(latency_us, std::memory_order_relaxed);
}

LatencySnapshot LatencyHistogram::Snapshot() const {
  LatencySnapshot s;
  for (size_t i = 0; i < kLatencyBuckets; ++i) {
    s.counts[i] = counts_[i].load(std::memory_order_relaxed);
  }
  s.sum_us = sum_us_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace strata
