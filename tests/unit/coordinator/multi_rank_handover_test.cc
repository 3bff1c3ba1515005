// A disk tier over ranks in separate processes hands its evicted records
// over with every rank's share (DiskTransport::SubmitShares): each peer reads
// its own file and returns the bytes over its record link as JobData, and
// the sink sees one record whose page records hold every rank's share side
// by side. Checked byte for byte against each rank's file.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launch/runtime/synthetic_runtime.h"
#include "store/record/record_header.h"
#include "store/record/record_layout.h"
#include "tests/unit/coordinator/handover_test_support.h"
#include "tests/unit/coordinator/multi_rank_test_support.h"

namespace strata {
namespace {

using testing::Cluster;
using testing::ClusterOptions;
using testing::ScratchDir;

constexpr auto kIdleBound = std::chrono::seconds(30);
using handover_testing::Bytes;
using handover_testing::FileShare;
using handover_testing::ImportWhenRoom;
using handover_testing::ReadShare;
using handover_testing::RecordingSink;

// Three ranks whose disk holds three and a half records of 10 pages (the
// fourth store evicts), a recording sink at the end of the chain, and a
// runtime over every rank's planes.
class MultiRankHandoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const uint64_t one = RecordFileBytes(layout_, {.tail_pages = 10});
    ClusterOptions options;
    options.world_size = 3;
    options.disk_limit_bytes = 3 * one + one / 2;
    cluster_.emplace(dir_.path(), options);
    STRATA_OK_OR_SKIP_DIRECT_IO(cluster_->Start());
    cluster_->store().SetEvictionSink(&sink_);
    runtime_.emplace(cluster_->all_planes(), &cluster_->store());
  }
  // A new conversation of one 10-page record, stored on every rank.
  uint32_t StoreConversation() {
    const uint32_t conv = runtime_->NewConversation();
    EXPECT_TRUE(runtime_->Turn(conv, 640).ok());
    EXPECT_TRUE(runtime_->WaitForStores().ok());
    EXPECT_TRUE(cluster_->store().WaitIdle(kIdleBound));
    return conv;
  }

  const RecordLayout layout_{testing::RankGeometryOf()};
  ScratchDir dir_;
  std::optional<Cluster> cluster_;
  RecordingSink sink_;
  std::optional<SyntheticRuntime> runtime_;
};

TEST_F(MultiRankHandoverTest, EvictedRecordsReachTheSinkWithEveryRanksShareSideBySide) {
  Cluster& c = *cluster_;
  RecordingSink& sink = sink_;
  // Every rank's file of every record, as it was last seen on disk.
  std::map<std::string, std::vector<FileShare>> seen;
  for (int i = 0; i < 6; ++i) {
    StoreConversation();
    for (const auto& [name, size] : c.Files(0)) {
      std::vector<FileShare>& shares = seen[name.substr(0, name.size() - 5)];
      shares.clear();
      for (uint32_t r = 0; r < c.world_size(); ++r) {
        shares.push_back(ReadShare(c.RecordDir(r) + "/" + name));
      }
    }
  }
  c.store().SetEvictionSink(nullptr);
  const uint64_t evicted = c.store().Stats().disk.evicted_total;
  ASSERT_GT(evicted, 0u);
  EXPECT_EQ(sink.offered.size(), evicted);
  const uint64_t share_page = layout_.stored_page_record_bytes(false);
  for (const RecordingSink::Offered& o : sink.offered) {
    SCOPED_TRACE(o.key.ToFileStem());
    ASSERT_EQ(seen.count(o.key.ToFileStem()), 1u);
    const std::vector<FileShare>& files = seen.at(o.key.ToFileStem());
    ASSERT_EQ(o.pages.size(), files[0].pages.size());
    for (size_t i = 0; i < o.pages.size(); ++i) {
      ASSERT_EQ(o.pages[i].size(), c.world_size() * share_page);
      for (uint32_t r = 0; r < c.world_size(); ++r) {
        const Bytes slice(o.pages[i].begin() + r * share_page,
                          o.pages[i].begin() + (r + 1) * share_page);
        EXPECT_EQ(slice, files[r].pages[i]) << "page " << i << " of rank " << r;
      }
    }
    Bytes rows;
    for (const FileShare& f : files) rows.insert(rows.end(), f.row.begin(), f.row.end());
    EXPECT_EQ(o.row, rows);
  }
  // The evicted files are gone from every rank; nothing failed on a link.
  c.ExpectSameFilesEverywhere();
  EXPECT_EQ(c.Files(0).size(), c.store().index().size());
  for (const PeerLinkReport& p : c.coordinator().PeerLinks()) {
    EXPECT_TRUE(p.errors_by_reason.empty()) << "rank " << p.peer.value;
  }
  ASSERT_TRUE(c.Close().ok());
}

// What the handover offered goes back in through Import: every rank writes
// its own share from the bytes rank zero sends, the record commits once all
// wrote, and the runtime restores it byte-exact on every rank.
TEST_F(MultiRankHandoverTest, AnImportedRecordIsWrittenOnEveryRankAndRestoresByteExact) {
  Cluster& c = *cluster_;
  SyntheticRuntime& rt = *runtime_;
  RecordingSink& sink = sink_;
  std::map<PrefixKey, uint32_t> conversation_of;
  for (int i = 0; i < 6; ++i) {
    std::set<PrefixKey> before;
    for (const IndexEntry& e : c.store().index().Entries()) before.insert(e.key);
    const uint32_t conv = StoreConversation();
    for (const IndexEntry& e : c.store().index().Entries()) {
      if (before.count(e.key) == 0) conversation_of[e.key] = conv;
    }
  }
  c.store().SetEvictionSink(nullptr);
  ASSERT_GE(sink.offered.size(), 2u);
  // The first two records evicted come back; each pushes another out.
  std::vector<uint32_t> back;
  for (size_t i = 0; i < 2; ++i) {
    const RecordingSink::Offered& o = sink.offered[i];
    ASSERT_EQ(c.store().Imported(o.key), ImportState::kGone);
    const Status imported = ImportWhenRoom(c.store(), o.View(), kIdleBound);
    ASSERT_TRUE(imported.ok()) << imported.ToString();
    EXPECT_EQ(c.store().Import(o.View(), 0).code(), StatusCode::kAlreadyExists);
    ASSERT_TRUE(c.store().WaitIdle(kIdleBound));
    std::vector<StoreEvent> events;
    c.store().Poll(0, events);
    EXPECT_EQ(c.store().Imported(o.key), ImportState::kLanded);
    back.push_back(conversation_of.at(o.key));
  }
  c.ExpectSameFilesEverywhere();
  EXPECT_EQ(c.Files(0).size(), c.store().index().size());
  rt.EvictGpu();
  for (uint32_t conv : back) {
    Result<TurnReport> t = rt.Turn(conv, 10);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_TRUE(t->host_hit);
    EXPECT_EQ(t->host_reused_tokens, 640u);
  }
  EXPECT_EQ(rt.stats().mismatches, 0u);
  EXPECT_GT(rt.stats().restored_bytes, 0u);
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(c.store().WaitIdle(kIdleBound));
  // A record that does not extend what the tier holds is refused.
  RecordingSink::Offered orphan = sink.offered[0];
  orphan.parent = PrefixKey{64, {}};
  orphan.key.consumed += 64;
  EXPECT_EQ(c.store().Import(orphan.View(), 0).code(), StatusCode::kFailedPrecondition);
  // Pieces of another width are refused.
  RecordingSink::Offered narrow = sink.offered[1];
  narrow.key.digest[0] ^= 1;
  for (Bytes& p : narrow.pages) p.resize(p.size() / 3);
  EXPECT_EQ(c.store().Import(narrow.View(), 0).code(), StatusCode::kInvalidArgument);
  for (const PeerLinkReport& p : c.coordinator().PeerLinks()) {
    EXPECT_TRUE(p.errors_by_reason.empty()) << "rank " << p.peer.value;
  }
  ASSERT_TRUE(c.Close().ok());
}

}  // namespace
}  // namespace strata
