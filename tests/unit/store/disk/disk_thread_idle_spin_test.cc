// The disk thread's idle spin (DiskThreadOptions::idle_spin): a job that
// comes while the idle thread spins is taken without the thread going to
// sleep, Shutdown ends a spin at once, and a zero budget never spins.
// Observed through a ScriptedBlockIo, which counts the Reap calls that could
// sleep.
#include <gtest/gtest.h>

#include <chrono>

#include "store/disk/disk_thread.h"
#include "tests/unit/store/disk/scripted_block_io.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::KeyOf;
using testing::MakeGeometry;
using testing::ScriptedFixture;

// Longer than any test: only a job or Shutdown ends such a spin in time.
constexpr std::chrono::seconds kEndlessSpin{120};

DiskThreadOptions Spinning(std::chrono::microseconds budget) {
  DiskThreadOptions o;
  o.idle_spin = budget;
  return o;
}

// Unlinks a record that was never written (success) and waits for it.
Status UnlinkMissing(DiskThread& t, uint64_t id) {
  STRATA_RETURN_IF_ERROR(t.Submit({JobId(id), UnlinkRecordJob{KeyOf(64 * id), Durability::kNone}}));
  if (!t.WaitForCompletion(testing::kJobWait)) return Status::Aborted("no completion");
  std::vector<DiskCompletion> done;
  t.Poll(done);
  if (done.size() != 1 || done[0].id != JobId(id)) return Status::Internal("wrong completion");
  return done[0].status;
}

TEST(DiskThreadIdleSpinTest, AJobThatComesWhileTheThreadSpinsIsTakenWithoutSleeping) {
  ScriptedFixture f(MakeGeometry(64, {4096}, 4096), Spinning(kEndlessSpin));
  STRATA_DISK_FIXTURE_OR_SKIP(f);
  ASSERT_TRUE(UnlinkMissing(*f.thread, 1).ok());
  const uint64_t slept = f.io->waiting_reaps();
  for (uint64_t id = 2; id <= 5; ++id) ASSERT_TRUE(UnlinkMissing(*f.thread, id).ok());
  EXPECT_EQ(f.io->waiting_reaps(), slept) << "the thread slept between jobs that came as it spun";
  EXPECT_GT(f.thread->stats().idle_spin_ns, 0u);
  EXPECT_EQ(f.thread->stats().jobs_completed, 5u);
}

TEST(DiskThreadIdleSpinTest, ShutdownEndsASpin) {
  ScriptedFixture f(MakeGeometry(64, {4096}, 4096), Spinning(kEndlessSpin));
  STRATA_DISK_FIXTURE_OR_SKIP(f);
  ASSERT_TRUE(UnlinkMissing(*f.thread, 1).ok());
  // The thread now spins for a job; a spin deaf to Shutdown outlasts this.
  EXPECT_TRUE(f.thread->Shutdown(std::chrono::seconds(10)).ok());
}

TEST(DiskThreadIdleSpinTest, AZeroBudgetNeverSpins) {
  ScriptedFixture f(MakeGeometry(64, {4096}, 4096), Spinning(std::chrono::microseconds(0)));
  STRATA_DISK_FIXTURE_OR_SKIP(f);
  for (uint64_t id = 1; id <= 3; ++id) ASSERT_TRUE(UnlinkMissing(*f.thread, id).ok());
  // Each of the first two jobs' turns ended in a wait before the next job came.
  EXPECT_GE(f.io->waiting_reaps(), 2u);
  EXPECT_EQ(f.thread->stats().idle_spin_ns, 0u);
}

}  // namespace
}  // namespace strata
