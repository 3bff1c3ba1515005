#include "launch/bench/store_bench_hand_work.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata {
namespace {

TEST(StoreBenchHandWorkTest, NamesTheStepsInOrder) {
  const std::vector<HandStep> fetch = {HandStep::kDirectRead, HandStep::kXxh3, HandStep::kMemcpy};
  EXPECT_EQ(HandWorkName(fetch), "O_DIRECT read + XXH3 + memcpy");
  const std::vector<HandStep> copy = {HandStep::kMemcpy};
  EXPECT_EQ(HandWorkName(copy), "memcpy");
  EXPECT_EQ(HandWorkName({}), "");
  EXPECT_STREQ(HandStepName(HandStep::kDirectWrite), "O_DIRECT write");
}

TEST(StoreBenchHandWorkTest, SerialStepsAddTheirTimesOverThePhasesBytes) {
  // 1 GB copied in 0.1 s, checksummed in 0.2 s, written in 0.7 s: the
  // baseline of a phase that moved 1.1 GB of record files takes 1 s.
  auto part = [](uint64_t bytes, double seconds, double cpu_seconds) {
    Sample p;
    p.bytes = bytes;
    p.seconds = seconds;
    p.cpu_seconds = cpu_seconds;
    p.latency_ms = {1, 2, 3};
    return p;
  };
  const std::vector<Sample> parts = {part(1'000'000'000, 0.1, 0.1), part(1'000'000'000, 0.2, 0.2),
                                     part(1'100'000'000, 0.7, 0.05)};
  const Sample s = Serial(1'100'000'000, parts);
  EXPECT_EQ(s.bytes, 1'100'000'000u);
  EXPECT_DOUBLE_EQ(s.seconds, 1.0);
  EXPECT_DOUBLE_EQ(s.cpu_seconds, 0.35);
  EXPECT_DOUBLE_EQ(s.gbps(), 1.1);
  EXPECT_TRUE(s.latency_ms.empty());          // no step's requests are a record's latency
  EXPECT_DOUBLE_EQ(Serial(5, {}).gbps(), 0);  // no steps: no rate, not infinity
}

TEST(StoreBenchHandWorkTest, StepsReportTheBytesTheyWereAskedFor) {
  // Pieces wrap around a window smaller than the work.
  HandWork work(/*window_bytes=*/64 << 10, /*piece_bytes=*/24 << 10, /*nice=*/0);
  EXPECT_EQ(work.Memcpy(1 << 20).bytes, 1u << 20);
  EXPECT_EQ(work.Xxh3((1 << 20) + 7).bytes, (1u << 20) + 7);
}

}  // namespace
}  // namespace strata
