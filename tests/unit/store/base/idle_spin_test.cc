#include "store/base/idle_spin.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

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

}  // namespace
}  // namespace strata
