#include "store/base/wake_signal.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "store/base/mutex.h"

namespace strata {
namespace {

// Bound on any one wait; a passing test never reaches it.
constexpr std::chrono::seconds kBound{30};

TEST(WakeSignalTest, ANotifyBeforeTheWaitIsNotLost) {
  WakeSignal s;
  s.Notify();
  // Already raised: a wait whose deadline has passed still sees it.
  EXPECT_TRUE(s.WaitUntil(std::chrono::steady_clock::now()));
}

TEST(WakeSignalTest, AWaitLowersTheSignal) {
  WakeSignal s;
  s.Notify();
  s.Notify();  // two notifications before one wait: one raise
  EXPECT_TRUE(s.WaitUntil(std::chrono::steady_clock::now()));
  EXPECT_FALSE(s.WaitUntil(std::chrono::steady_clock::now()));
  EXPECT_EQ(s.notifications(), 2u);
}

TEST(WakeSignalTest, ANotifyFromAnotherThreadWakesTheWaiter) {
  WakeSignal s;
  std::thread notifier([&s] { s.Notify(); });
  EXPECT_TRUE(s.WaitFor(kBound));  // false would mean the bound passed
  notifier.join();
}

TEST(WakeSignalTest, AWaitWithoutANotifyEndsAtItsDeadline) {
  WakeSignal s;
  EXPECT_FALSE(s.WaitFor(std::chrono::milliseconds(1)));
  EXPECT_EQ(s.notifications(), 0u);
}

TEST(WakeSignalTest, ASpinningWaitSeesANotifyFromAnotherThread) {
  WakeSignal s;
  const auto start = std::chrono::steady_clock::now();
  std::thread notifier([&s] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    s.Notify();
  });
  EXPECT_TRUE(s.WaitUntil(start + 2 * kBound, 2 * kBound));
  EXPECT_LT(std::chrono::steady_clock::now() - start, kBound) << "the spin missed the notify";
  notifier.join();
  EXPECT_FALSE(s.WaitUntil(std::chrono::steady_clock::now())) << "the spinning wait lowered it";
}

TEST(WakeSignalTest, ASpinEndsAtTheWaitsDeadline) {
  WakeSignal s;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(s.WaitUntil(start + std::chrono::milliseconds(1), 2 * kBound));
  EXPECT_LT(std::chrono::steady_clock::now() - start, kBound) << "the spin outlasted the deadline";
}

TEST(WakeSignalTest, AHookRunsOnEveryNotifyUntilItIsDetached) {
  WakeSignal s;
  int runs = 0;
  s.AlsoRun([&runs] { ++runs; });
  s.Notify();
  s.Notify();
  EXPECT_EQ(runs, 2);  // once per Notify, raised or not
  s.AlsoRun(nullptr);
  s.Notify();
  EXPECT_EQ(runs, 2);
  EXPECT_TRUE(s.WaitUntil(std::chrono::steady_clock::now()));  // the signal itself still works
}

TEST(WakeSignalTest, AHookRunsOnTheNotifyingThread) {
  WakeSignal s;
  std::thread::id ran_on;
  s.AlsoRun([&ran_on] { ran_on = std::this_thread::get_id(); });
  std::thread notifier([&s] { s.Notify(); });
  const std::thread::id notifier_id = notifier.get_id();
  notifier.join();
  EXPECT_EQ(ran_on, notifier_id);
}

TEST(WakeSignalTest, AHookRunsOutsideTheSignalsLockAndMayNotifyItAgain) {
  WakeSignal s;
  int depth = 0;
  int runs = 0;
  uint64_t seen = 0;
  s.AlsoRun([&] {
    ++runs;
    seen = s.notifications();      // takes the signal's lock: not held around the hook
    if (depth++ == 0) s.Notify();  // runs the hook again, nested, on this thread
  });
  s.Notify();
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(seen, 2u);
  EXPECT_TRUE(s.WaitUntil(std::chrono::steady_clock::now()));
}

TEST(WakeSignalTest, DetachingWaitsForAHookRunningOnAnotherThread) {
  WakeSignal s;
  Mutex mu;
  CondVar cv;
  bool entered = false;
  bool release = false;
  s.AlsoRun([&] {
    MutexLock lock(mu);
    entered = true;
    cv.NotifyAll();
    while (!release) cv.Wait(lock);
  });
  std::thread notifier([&s] { s.Notify(); });
  bool hook_entered = false;
  {
    MutexLock lock(mu);
    const auto until = std::chrono::steady_clock::now() + kBound;
    while (!entered && cv.WaitUntil(lock, until)) {
    }
    hook_entered = entered;
    release = !hook_entered;  // a failing test still ends its threads
  }
  if (!hook_entered) {
    cv.NotifyAll();
    notifier.join();
    FAIL() << "the hook never ran";
  }
  std::atomic<bool> detached{false};
  std::thread detacher([&] {
    s.AlsoRun(nullptr);
    detached = true;
  });
  // The hook is still running: AlsoRun must not have returned (a slow
  // detacher thread can only make this pass, never fail wrongly).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(detached.load());
  {
    MutexLock lock(mu);
    release = true;
  }
  cv.NotifyAll();
  detacher.join();
  notifier.join();
  EXPECT_TRUE(detached.load());
  int runs = 0;
  s.AlsoRun([&runs] { ++runs; });
  s.AlsoRun(nullptr);
  s.Notify();
  EXPECT_EQ(runs, 0);  // a replaced hook is never called again
}

}  // namespace
}  // namespace strata
