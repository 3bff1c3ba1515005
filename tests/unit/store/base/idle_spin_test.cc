#include "store/base/idle_spin.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace strata {
namespace {

// Takes every free spin slot; returns how many it took.
uint32_t TakeAll() {
  uint32_t taken = 0;
  while (TakeSpinSlot()) ++taken;
  return taken;
}

void ReturnAll(uint32_t taken) {
  for (uint32_t i = 0; i < taken; ++i) ReturnSpinSlot();
}

TEST(IdleSpinTest, AtMostOneSpinnerPerFourUsableCpus) {
  const uint32_t taken = TakeAll();
  EXPECT_EQ(taken, std::max(1u, UsableCpus() / kCpusPerSpinner));
  ReturnAll(taken);
  EXPECT_EQ(TakeAll(), taken) << "a returned slot was not free again";
  ReturnAll(taken);
}

TEST(IdleSpinTest, WithoutAFreeSlotASpinChecksOnceAndGivesUp) {
  const uint32_t taken = TakeAll();
  uint32_t checks = 0;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(SpinUntil(std::chrono::seconds(60), [&] { return ++checks > 1'000'000; }));
  EXPECT_EQ(checks, 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  ReturnAll(taken);
}

TEST(IdleSpinTest, ASpinEndsWhenReadyAndReturnsItsSlot) {
  uint32_t checks = 0;
  EXPECT_TRUE(SpinUntil(std::chrono::seconds(60), [&] { return ++checks == 100; }));
  EXPECT_EQ(checks, 100u);
  EXPECT_FALSE(SpinUntil(std::chrono::microseconds(50), [] { return false; }));
  const uint32_t taken = TakeAll();
  EXPECT_EQ(taken, std::max(1u, UsableCpus() / kCpusPerSpinner)) << "a spin kept its slot";
  ReturnAll(taken);
}

TEST(IdleSpinTest, ASetSlotCountReplacesTheDefaultUntilReset) {
  {
    const ScopedSpinSlots three(3);
    EXPECT_EQ(SpinSlots(), 3u);
    const uint32_t taken = TakeAll();
    EXPECT_EQ(taken, 3u);
    ReturnAll(taken);
  }
  EXPECT_EQ(SpinSlots(), std::max(1u, UsableCpus() / kCpusPerSpinner));
  EXPECT_EQ(TakeAll(), SpinSlots());
  ReturnAll(SpinSlots());
}

TEST(IdleSpinTest, ACheckThatThrowsReturnsTheSlot) {
  const ScopedSpinSlots one(1);
  uint32_t checks = 0;
  EXPECT_THROW(SpinUntil(std::chrono::seconds(60),
                         [&]() -> bool {
                           if (++checks == 2) throw std::runtime_error("a handler threw");
                           return false;
                         }),
               std::runtime_error);
  EXPECT_EQ(checks, 2u) << "the throw came while spinning, with the slot held";
  EXPECT_TRUE(TakeSpinSlot()) << "the slot leaked";
  ReturnSpinSlot();
}

// With yielding on, a spin still ends on the check that finds work (here
// another thread's store, so the yields must let it run on a busy machine)
// and at its budget; the setting is off by default and restores.
TEST(IdleSpinTest, AYieldingSpinStillEndsWhenReadyAndAtItsBudget) {
  EXPECT_FALSE(SpinYields());
  SetSpinYield(true);
  EXPECT_TRUE(SpinYields());
  std::atomic<bool> ready{false};
  std::thread setter([&] { ready.store(true, std::memory_order_release); });
  EXPECT_TRUE(SpinUntil(
      std::chrono::seconds(60), [&] { return ready.load(std::memory_order_acquire); }, 1));
  setter.join();
  uint32_t checks = 0;
  EXPECT_FALSE(SpinUntil(
      std::chrono::microseconds(200), [&] { return ++checks == 0; }, 1));
  EXPECT_GT(checks, 1u) << "the spin gave up before checking again";
  SetSpinYield(false);
  EXPECT_FALSE(SpinYields());
}

}  // namespace
}  // namespace strata
