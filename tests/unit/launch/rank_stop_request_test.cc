// StopRequest: sticky, wakes waiters on any thread, and bounded waits end at
// their deadline.
#include "launch/rank/stop_request.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;

TEST(RankStopRequestTest, StartsUnrequestedAndAPastDeadlineEndsTheWait) {
  StopRequest stop;
  EXPECT_FALSE(stop.requested());
  EXPECT_FALSE(stop.WaitUntil(Clock::now() - std::chrono::seconds(1)));
}

TEST(RankStopRequestTest, IsStickyAndAWaitAfterItReturnsAtOnce) {
  StopRequest stop;
  stop.Request();
  stop.Request();
  EXPECT_TRUE(stop.requested());
  // A past deadline: only the flag can make this true.
  EXPECT_TRUE(stop.WaitUntil(Clock::now() - std::chrono::seconds(1)));
}

TEST(RankStopRequestTest, WakesAWaiterOnAnotherThread) {
  StopRequest stop;
  std::promise<void> waiting;
  std::future<bool> woken = std::async(std::launch::async, [&] {
    waiting.set_value();
    return stop.WaitUntil(Clock::now() + std::chrono::minutes(5));
  });
  waiting.get_future().wait();
  stop.Request();
  ASSERT_EQ(woken.wait_for(std::chrono::minutes(1)), std::future_status::ready);
  EXPECT_TRUE(woken.get());
}

}  // namespace
}  // namespace strata
