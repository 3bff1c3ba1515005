#include "store/transfer/gated_transfers.h"

#include <gtest/gtest.h>

#include <deque>

#include "tests/support/manual_transfers.h"

namespace strata {
namespace {

using testing::ManualTransfers;

TransferJob Job(uint64_t id) {
  TransferJob j;
  j.id = JobId(id);
  return j;
}

struct Gated {
  Gated() {
    auto m = std::make_unique<ManualTransfers>();
    manual = m.get();
    gated = std::make_unique<GatedTransfers>(std::move(m));
  }
  ManualTransfers* manual;
  std::unique_ptr<GatedTransfers> gated;
};

TEST(GatedTransfersTest, StartsShutAndRefusesWithoutIssuingTheCopy) {
  Gated g;
  Status s = g.gated->Submit(Job(1));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(g.manual->accepted.empty());
  EXPECT_EQ(g.gated->in_flight(), 0u);
}

TEST(GatedTransfersTest, CountsAcceptedJobsUntilPolledFinished) {
  Gated g;
  g.gated->Open();
  ASSERT_TRUE(g.gated->Submit(Job(1)).ok());
  ASSERT_TRUE(g.gated->Submit(Job(2)).ok());
  EXPECT_EQ(g.gated->in_flight(), 2u);
  g.manual->finished = 1;
  std::vector<TransferCompletion> out{{JobId(99), Status::Ok(), 0}};  // Poll appends
  g.gated->Poll(out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].id, JobId(1));
  EXPECT_EQ(g.gated->in_flight(), 1u);
}

TEST(GatedTransfersTest, ShutRefusesNewJobsWhileAcceptedOnesStillDrain) {
  Gated g;
  g.gated->Open();
  ASSERT_TRUE(g.gated->Submit(Job(1)).ok());
  g.gated->Shut();
  EXPECT_EQ(g.gated->Submit(Job(2)).code(), StatusCode::kUnavailable);
  EXPECT_EQ(g.manual->accepted.size(), 1u);
  EXPECT_EQ(g.gated->in_flight(), 1u);  // still running: the planes must stay mapped
  g.manual->finished = 1;
  std::vector<TransferCompletion> out;
  g.gated->Poll(out);
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(g.gated->in_flight(), 0u);
  g.gated->Open();  // a runtime attached again
  EXPECT_TRUE(g.gated->Submit(Job(3)).ok());
}

}  // namespace
}  // namespace strata
