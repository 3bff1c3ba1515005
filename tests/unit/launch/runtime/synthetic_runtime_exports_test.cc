// The synthetic runtime answering a pooled store's export requests through
// the real HostStore interface: each refusal, the pin's lifetime (never
// evicted while pinned, released once), a rejected pin handed back, the
// chain described from the requested page, and eviction notices.
#include <gtest/gtest.h>

#include <set>

#include "tests/unit/launch/runtime/export_rig.h"

namespace strata::testing {
namespace {

constexpr uint64_t kTurnTokens = 640;  // 10 pages of 64 tokens

TEST(SyntheticRuntimeExportsTest, AMissingKeyIsNotFound) {
  ExportRig rig(64);
  rig.Converse(kTurnTokens);
  const ExportId id =
      rig.Request(PrefixKey{.consumed = kTurnTokens, .digest = {}}, /*generation=*/1, 0);
  EXPECT_EQ(rig.Refused(ExportRefusal::kNotFound), 1u);
  EXPECT_EQ(rig.pooled->open_export(id), nullptr);
  EXPECT_EQ(rig.pooled->pool_stats().exports.refused[0], 1u);
  EXPECT_EQ(rig.runtime->export_pins(), 0u);
}

TEST(SyntheticRuntimeExportsTest, AnotherGenerationIsGenerationChanged) {
  ExportRig rig(64);
  const GpuCheckpointInfo a = rig.Converse(kTurnTokens);
  rig.Request(a.key, a.generation + 1, 0);
  EXPECT_EQ(rig.Refused(ExportRefusal::kGenerationChanged), 1u);
  EXPECT_EQ(rig.Find(a.key)->pins, 0u);
}

TEST(SyntheticRuntimeExportsTest, AStartBeyondTheChainIsAChainGap) {
  ExportRig rig(64);
  const GpuCheckpointInfo a = rig.Converse(kTurnTokens);
  rig.Request(a, a.chain_pages + 1);
  EXPECT_EQ(rig.Refused(ExportRefusal::kChainGap), 1u);
  // The start at the chain's end exports the row alone.
  const ExportId row_only = rig.Request(a, a.chain_pages);
  ASSERT_NE(rig.pooled->open_export(row_only), nullptr);
  EXPECT_TRUE(rig.pooled->open_export(row_only)->pages.empty());
}

TEST(SyntheticRuntimeExportsTest, APinThatWouldStarveTheNextTurnIsNoHeadroom) {
  // 32 pages; turns of 10. With a and b pinned by exports, c's pin leaves 2
  // free pages and nothing reclaimable for a 10-page turn.
  ExportRig rig(32);
  const GpuCheckpointInfo a = rig.Converse(kTurnTokens);
  const GpuCheckpointInfo b = rig.Converse(kTurnTokens);
  const GpuCheckpointInfo c = rig.Converse(kTurnTokens);
  ASSERT_EQ(rig.runtime->gpu_checkpoints(), 3u);
  ASSERT_NE(rig.pooled->open_export(rig.Request(a, 0)), nullptr);  // b, c reclaimable
  ASSERT_NE(rig.pooled->open_export(rig.Request(b, 0)), nullptr);  // c reclaimable
  EXPECT_EQ(rig.pooled->open_export(rig.Request(c, 0)), nullptr);
  EXPECT_EQ(rig.Refused(ExportRefusal::kNoHeadroom), 1u);
  EXPECT_EQ(rig.Find(c.key)->pins, 0u);
  // The rule kept the next turn possible: it evicts c.
  EXPECT_TRUE(rig.runtime->Turn(rig.runtime->NewConversation(), kTurnTokens).ok());
  EXPECT_FALSE(rig.Find(c.key).has_value());
}

TEST(SyntheticRuntimeExportsTest, APinnedCheckpointOutlivesEvictionUntilItsEnd) {
  ExportRig rig(64);
  const GpuCheckpointInfo a = rig.Converse(kTurnTokens);
  const ExportId id = rig.Request(a, 0);
  ASSERT_NE(rig.pooled->open_export(id), nullptr);
  EXPECT_EQ(rig.runtime->stats().exports_pinned, 1u);
  rig.runtime->EvictGpu();
  ASSERT_TRUE(rig.Find(a.key).has_value());
  EXPECT_EQ(rig.Find(a.key)->pins, 1u);
  // No end while the copies have not drained: the pin stays.
  rig.runtime->PollOnce();
  EXPECT_EQ(rig.runtime->export_pins(), 1u);
  ASSERT_TRUE(rig.pooled->FinishExport(id).ok());
  rig.runtime->PollOnce();
  EXPECT_EQ(rig.runtime->export_pins(), 0u);
  EXPECT_EQ(rig.Find(a.key)->pins, 0u);
  EXPECT_EQ(rig.runtime->stats().exports_ended, 1u);
  // A second end finds nothing.
  EXPECT_EQ(rig.pooled->FinishExport(id).code(), StatusCode::kNotFound);
  rig.runtime->PollOnce();
  EXPECT_EQ(rig.runtime->stats().exports_ended, 1u);
  rig.runtime->EvictGpu();
  EXPECT_FALSE(rig.Find(a.key).has_value());
  // Evicted: a request for it now finds nothing.
  rig.Request(a, 0);
  EXPECT_EQ(rig.Refused(ExportRefusal::kNotFound), 1u);
}

TEST(SyntheticRuntimeExportsTest, ARejectedPinIsGivenBackAtOnce) {
  ExportRig rig(64);
  const GpuCheckpointInfo a = rig.Converse(kTurnTokens);
  const ExportId id = rig.Request(a, 0, /*staging_bytes=*/4096);  // far too small
  EXPECT_EQ(rig.runtime->stats().exports_pinned, 1u);
  EXPECT_EQ(rig.pooled->open_export(id), nullptr);
  EXPECT_EQ(rig.pooled->pool_stats().exports.rejected, 1u);
  rig.runtime->PollOnce();  // the end the store queued
  EXPECT_EQ(rig.runtime->export_pins(), 0u);
  EXPECT_EQ(rig.Find(a.key)->pins, 0u);
  EXPECT_EQ(rig.runtime->stats().exports_ended, 1u);
}

TEST(SyntheticRuntimeExportsTest, TheDescriptionIsTheChainFromTheRequestedPage) {
  ExportRig rig(64);
  const uint32_t c = rig.runtime->NewConversation();
  ASSERT_TRUE(rig.runtime->Turn(c, kTurnTokens).ok());
  ASSERT_TRUE(rig.runtime->Turn(c, 320).ok());  // 5 more pages, a child checkpoint
  ASSERT_TRUE(rig.runtime->WaitForStores().ok());
  const GpuCheckpointInfo child = rig.Newest();
  ASSERT_EQ(child.chain_pages, 15u);
  const ExportId id = rig.Request(child, 8);  // spans the parent's tail and the child's
  const ExportDescription* d = rig.pooled->open_export(id);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->start_page, 8u);
  ASSERT_EQ(d->pages.size(), 7u);
  EXPECT_EQ(std::set<PageId>(d->pages.begin(), d->pages.end()).size(), 7u);
  // The child pinned keeps its parent too.
  rig.runtime->EvictGpu();
  EXPECT_EQ(rig.runtime->gpu_checkpoints(), 2u);
}

TEST(SyntheticRuntimeExportsTest, EvictionNoticesReachTheStoreBeforeItsNextCall) {
  ExportRig rig(64);
  rig.Converse(kTurnTokens);
  rig.Converse(kTurnTokens);
  rig.runtime->EvictGpu();
  EXPECT_EQ(rig.pooled->pool_stats().eviction_notices, 0u);  // no store call yet
  rig.runtime->PollOnce();
  EXPECT_EQ(rig.pooled->pool_stats().eviction_notices, 2u);
  EXPECT_EQ(rig.pooled->pool_stats().evictions_lost, 0u);
}

TEST(SyntheticRuntimeExportsTest, AFullNoticeQueueReportsEvictionsLostOncePerOverflow) {
  ExportRig rig(96, /*eviction_notices_max=*/2);
  for (int i = 0; i < 5; ++i) rig.Converse(kTurnTokens);
  rig.runtime->EvictGpu();  // 5 notices: the oldest 3 dropped
  rig.runtime->PollOnce();
  EXPECT_EQ(rig.pooled->pool_stats().eviction_notices, 2u);
  EXPECT_EQ(rig.pooled->pool_stats().evictions_lost, 1u);
  EXPECT_EQ(rig.runtime->stats().evictions_lost, 1u);
  rig.runtime->PollOnce();  // nothing new
  EXPECT_EQ(rig.pooled->pool_stats().evictions_lost, 1u);
  rig.Converse(kTurnTokens);
  rig.runtime->EvictGpu();  // one notice: within the bound
  rig.runtime->PollOnce();
  EXPECT_EQ(rig.pooled->pool_stats().eviction_notices, 3u);
  EXPECT_EQ(rig.pooled->pool_stats().evictions_lost, 1u);
}

}  // namespace
}  // namespace strata::testing
