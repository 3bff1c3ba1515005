#include "store/base/latency_histogram.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace strata {
namespace {

TEST(LatencyHistogramTest, BoundsAreInclusive) {
  EXPECT_EQ(LatencyHistogram::BucketOf(0), 0u);
  EXPECT_EQ(LatencyHistogram::BucketOf(50), 0u);
  EXPECT_EQ(LatencyHistogram::BucketOf(51), 1u);
  EXPECT_EQ(LatencyHistogram::BucketOf(1'000), 4u);
  EXPECT_EQ(LatencyHistogram::BucketOf(10'000'000), kLatencyBuckets - 2);
  EXPECT_EQ(LatencyHistogram::BucketOf(10'000'001), kLatencyBuckets - 1);
  EXPECT_EQ(LatencyHistogram::BucketOf(UINT64_MAX), kLatencyBuckets - 1);
}

TEST(LatencyHistogramTest, RecordsCountsAndSum) {
  LatencyHistogram h;
  h.Record(10);
  h.Record(75);
  h.Record(75);
  h.Record(20'000'000);
  LatencySnapshot s = h.Snapshot();
  EXPECT_EQ(s.counts[0], 1u);
  EXPECT_EQ(s.counts[1], 2u);
  EXPECT_EQ(s.counts[kLatencyBuckets - 1], 1u);
  EXPECT_EQ(s.count(), 4u);
  EXPECT_EQ(s.sum_us, 10u + 75 + 75 + 20'000'000);
}

TEST(LatencyHistogramTest, ConcurrentRecordsAreAllCounted) {
  LatencyHistogram h;
  constexpr int kThreads = 4;
  constexpr int kEach = 10'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < kEach; ++i) h.Record(static_cast<uint64_t>(t * 1000 + i % 7));
    });
  }
  for (std::thread& t : threads) t.join();
  LatencySnapshot s = h.Snapshot();
  EXPECT_EQ(s.count(), static_cast<uint64_t>(kThreads * kEach));
  uint64_t sum = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kEach; ++i) sum += static_cast<uint64_t>(t * 1000 + i % 7);
  }
  EXPECT_EQ(s.sum_us, sum);
}

}  // namespace
}  // namespace strata
