// Records whose share on one rank is larger than a record link queues at
// once still cross the links, paced (docs/wire.md, host-data jobs): with
// the llama70b-tp8 preset (2.5 MiB per page on each rank) a 28-page record
// is 70 MiB per rank against a link's 64 MiB send queue. The disk tier's
// handover fetches it (the peer paces its answer) and the sink sees every
// rank's share byte for byte; an import sends it back (rank zero paces the
// peer's share) and the runtime restores it byte-exact.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "launch/presets.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/record/record_layout.h"
#include "tests/unit/coordinator/handover_test_support.h"
#include "tests/unit/coordinator/multi_rank_test_support.h"

namespace strata {
namespace {

using handover_testing::Bytes;
using handover_testing::FileShare;
using handover_testing::ImportWhenRoom;
using handover_testing::ReadShare;
using handover_testing::RecordingSink;
using testing::Cluster;
using testing::ClusterOptions;
using testing::ScratchDir;

// Generous: under ASan on two cores the whole test takes about 30 s.
constexpr auto kIdleBound = std::chrono::seconds(120);
constexpr uint32_t kPages = 28;
constexpr uint64_t kLinkQueueBytes = uint64_t{64} << 20;  // wire::LinkOptions' default

TEST(MultiRankLargeShareTest, SharesAboveALinksSendQueueAreHandedOverAndImportedByteExact) {
  Result<CacheGeometry> geometry = PresetGeometry("llama70b-tp8", 1, 32, 4);
  ASSERT_TRUE(geometry.ok()) << geometry.status().ToString();
  const RecordLayout layout(*geometry);
  ASSERT_GT(kPages * layout.stored_page_record_bytes(false), kLinkQueueBytes);
  const uint64_t one = RecordFileBytes(layout, {.tail_pages = kPages});
  ClusterOptions options;
  options.world_size = 2;
  options.disk_limit_bytes = one + one / 2;  // the second record evicts the first
  options.geometry = *geometry;
  options.job_timeout = std::chrono::seconds(120);
  ScratchDir dir;
  Cluster c(dir.path(), options);
  STRATA_OK_OR_SKIP_DIRECT_IO(c.Start());
  RecordingSink sink;
  c.store().SetEvictionSink(&sink);
  SyntheticRuntime rt(c.all_planes(), &c.store());
  const uint64_t tokens = uint64_t{kPages} * 64;

  const uint32_t a = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(a, tokens).ok());
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(c.store().WaitIdle(kIdleBound));
  const auto files = c.Files(0);
  ASSERT_EQ(files.size(), 1u);
  const std::string name = files.begin()->first;
  std::vector<FileShare> before;
  for (uint32_t r = 0; r < 2; ++r) before.push_back(ReadShare(c.RecordDir(r) + "/" + name));
  ASSERT_EQ(before[1].pages.size(), kPages);

  const uint32_t b = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(b, tokens).ok());
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(c.store().WaitIdle(kIdleBound));
  ASSERT_EQ(sink.offered.size(), 1u) << "the first record was not handed over";
  const RecordingSink::Offered& offered = sink.offered[0];
  ASSERT_EQ(offered.key.ToFileStem() + ".ckpt", name);
  const uint64_t share_page = layout.stored_page_record_bytes(false);
  ASSERT_EQ(offered.pages.size(), kPages);
  for (size_t i = 0; i < kPages; ++i) {
    for (uint32_t r = 0; r < 2; ++r) {
      const Bytes slice(offered.pages[i].begin() + r * share_page,
                        offered.pages[i].begin() + (r + 1) * share_page);
      ASSERT_EQ(slice, before[r].pages[i]) << "page " << i << " of rank " << r;
    }
  }
  c.store().SetEvictionSink(nullptr);

  // Back in: room is made by evicting the second record (kBusy until its
  // unlinks finished), then rank 1's 70 MiB share goes out paced.
  const Status imported = ImportWhenRoom(c.store(), offered.View(), kIdleBound);
  ASSERT_TRUE(imported.ok()) << imported.ToString();
  ASSERT_TRUE(c.store().WaitIdle(kIdleBound));
  std::vector<StoreEvent> events;
  c.store().Poll(0, events);
  EXPECT_EQ(c.store().Imported(offered.key), ImportState::kLanded);
  c.ExpectSameFilesEverywhere();
  const FileShare back = ReadShare(c.RecordDir(1) + "/" + name);
  ASSERT_EQ(back.pages.size(), kPages);
  for (size_t i = 0; i < kPages; ++i) {
    ASSERT_EQ(back.pages[i], before[1].pages[i]) << "rank 1's page " << i << " differs";
  }
  EXPECT_EQ(back.row, before[1].row);

  rt.EvictGpu();
  Result<TurnReport> t = rt.Turn(a, 10);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->host_hit);
  EXPECT_EQ(t->host_reused_tokens, tokens);
  EXPECT_EQ(rt.stats().mismatches, 0u);
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(c.store().WaitIdle(kIdleBound));
  for (const PeerLinkReport& p : c.coordinator().PeerLinks()) {
    EXPECT_TRUE(p.errors_by_reason.empty()) << "rank " << p.peer.value;
  }
  ASSERT_TRUE(c.Close().ok());
}

}  // namespace
}  // namespace strata
