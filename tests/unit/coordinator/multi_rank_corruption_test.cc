// A record that fails its checksums on one peer only, with ranks on separate
// hosts: the fetch fails with kCorruption naming that rank, and rank zero
// removes the record from every rank so the next lookup misses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "store/record/record_file.h"
#include "tests/unit/coordinator/multi_rank_test_support.h"

namespace strata {
namespace {

using testing::AwaitEvent;
using testing::Cluster;
using testing::DamagePage;
using ::testing::HasSubstr;
using testing::RootCheckpoint;
using testing::RootTokens;
using testing::ScratchDir;

TEST(MultiRankCorruptionTest, ARecordDamagedOnOnePeerIsRemovedFromEveryRank) {
  ScratchDir dir;
  Cluster c(dir.path());
  STRATA_OK_OR_SKIP_DIRECT_IO(c.Start());
  const PublishedCheckpoint cp = RootCheckpoint(1, 1, 10, 0, StateSlot(0));
  ASSERT_EQ(c.store().Store(cp), StoreOutcome::kQueued);
  ASSERT_TRUE(AwaitEvent(c.store(), StoreEvent::Kind::kStored).has_value());
  const std::string name = RecordFileName(cp.key);
  for (uint32_t r = 0; r < c.world_size(); ++r) ASSERT_EQ(c.Files(r).count(name), 1u);
  DamagePage(c.RecordDir(2) + "/" + name, 4);

  const PrefixHistory history(RootTokens(1, 10));
  std::optional<HostHit> hit = c.store().Lookup(history, 0, history.size());
  ASSERT_TRUE(hit.has_value());
  InboundTicket ticket{.ticket = JobId(1), .page_ids = {}, .row_slot = StateSlot(1)};
  for (uint64_t i = 0; i < hit->pages; ++i) ticket.page_ids.emplace_back(100 + i);
  ASSERT_TRUE(c.store().Fetch(*hit, ticket).ok());
  std::optional<StoreEvent> failed = AwaitEvent(c.store(), StoreEvent::Kind::kFetchFailed);
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->status.code(), StatusCode::kCorruption);
  EXPECT_THAT(failed->status.message(), HasSubstr("rank 2: read " + name));
  EXPECT_THAT(failed->status.message(), HasSubstr("page 4 of 10 failed its checksum"));
  ASSERT_TRUE(c.store().WaitIdle(testing::kClusterBound));  // the unlinks finish

  for (uint32_t r = 0; r < c.world_size(); ++r) {
    EXPECT_TRUE(c.Files(r).empty()) << "rank " << r;
  }
  EXPECT_EQ(c.store().Stats().fetch_checksum_failures, 1u);
  EXPECT_EQ(c.store().index().size(), 0u);
  EXPECT_FALSE(c.store().Lookup(history, 0, history.size()).has_value());
  for (const PeerLinkReport& p : c.coordinator().PeerLinks()) EXPECT_EQ(p.state, "up");
  ASSERT_TRUE(c.Close().ok());
}

}  // namespace
}  // namespace strata
