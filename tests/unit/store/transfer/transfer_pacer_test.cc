#include "store/transfer/transfer_pacer.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

using Clock = TransferPacer::Clock;
using std::chrono::milliseconds;

constexpr uint64_t kMiB = 1 << 20;

TEST(TransferPacerTest, UnboundedAdmitsAtOnce) {
  TransferPacer p(0, 16 * kMiB);
  const Clock::time_point t0{};
  EXPECT_FALSE(p.bounded());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(p.Admit(1ull << 30, t0), t0);
}

TEST(TransferPacerTest, BatchesBeyondTheBurstWaitForTheRate) {
  // 1,000 MiB/s: 16 MiB cost 16 ms; a burst of one batch.
  TransferPacer p(1000 * kMiB, 16 * kMiB);
  const Clock::time_point t0 = Clock::time_point{} + milliseconds(1000);
  EXPECT_EQ(p.Admit(16 * kMiB, t0), t0);                     // booked to t0 + 16
  EXPECT_EQ(p.Admit(16 * kMiB, t0), t0);                     // within the burst; to t0 + 32
  EXPECT_EQ(p.Admit(16 * kMiB, t0), t0 + milliseconds(16));  // to t0 + 48
  EXPECT_EQ(p.Admit(16 * kMiB, t0), t0 + milliseconds(32));
  // A caller that slept until then is admitted then.
  EXPECT_EQ(p.Admit(16 * kMiB, t0 + milliseconds(60)), t0 + milliseconds(60));
}

TEST(TransferPacerTest, OverALongRunTheRateHolds) {
  TransferPacer p(500 * kMiB, 16 * kMiB);
  Clock::time_point now{};
  const Clock::time_point start = now;
  uint64_t sent = 0;
  while (sent < 5000 * kMiB) {
    now = std::max(now, p.Admit(4 * kMiB, now));  // sleep until admitted
    sent += 4 * kMiB;
  }
  const double seconds = std::chrono::duration<double>(now - start).count();
  // 5,000 MiB at 500 MiB/s: 10 s, less the burst and the last batch.
  EXPECT_NEAR(seconds, 10.0, 0.05);
}

TEST(TransferPacerTest, IdleTimeIsNotSavedUpBeyondTheBurst) {
  TransferPacer p(1000 * kMiB, 16 * kMiB);
  const Clock::time_point t0 = Clock::time_point{} + milliseconds(1000);
  EXPECT_EQ(p.Admit(16 * kMiB, t0), t0);
  // A second later: one burst back to back, then the rate again.
  const Clock::time_point t1 = t0 + milliseconds(1000);
  EXPECT_EQ(p.Admit(16 * kMiB, t1), t1);
  EXPECT_EQ(p.Admit(16 * kMiB, t1), t1);
  EXPECT_EQ(p.Admit(16 * kMiB, t1), t1 + milliseconds(16));
}

}  // namespace
}  // namespace strata
