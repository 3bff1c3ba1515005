// Ranks on separate hosts, end to end over loopback: rank zero's coordinator
// and peer rank agents in one process, each rank with its own planes and
// record directory. Every restored byte is checked on every rank.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>
#include <utility>

#include "launch/runtime/synthetic_runtime.h"
#include "store/base/idle_spin.h"
#include "store/record/record_header.h"
#include "store/record/record_layout.h"
#include "tests/unit/coordinator/multi_rank_test_support.h"

namespace strata {
namespace {

using testing::Cluster;
using testing::ClusterOptions;
using testing::ScratchDir;

constexpr auto kIdleBound = std::chrono::seconds(30);

TEST(MultiRankTest, StoreFetchAndTruncateAreByteExactOnEveryRankAndSurviveARestart) {
  ScratchDir dir;
  ClusterOptions options;
  options.world_size = 4;
  const RecordLayout layout(testing::RankGeometryOf());
  {
    Cluster c(dir.path(), options);
    STRATA_OK_OR_SKIP_DIRECT_IO(c.Start());
    SyntheticRuntime rt(c.all_planes(), &c.store());
    const uint32_t a = rt.NewConversation();
    ASSERT_TRUE(rt.Turn(a, 1000).ok());  // a root record of 15 pages
    ASSERT_TRUE(rt.WaitForStores().ok());
    ASSERT_TRUE(rt.Turn(a, 600).ok());  // its child, 10 more pages
    ASSERT_TRUE(rt.WaitForStores().ok());
    ASSERT_TRUE(rt.Turn(a, 400).ok());  // the child's only child: the child drops its row
    const uint32_t b = rt.Branch(a, 500);
    ASSERT_TRUE(rt.Turn(b, 300).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
    ASSERT_TRUE(c.store().WaitIdle(kIdleBound));
    EXPECT_EQ(rt.stats().stored, 4u);
    EXPECT_EQ(rt.stats().store_failed, 0u);
    c.ExpectSameFilesEverywhere();
    EXPECT_EQ(c.Files(0).size(), c.store().index().size());

    // The truncated middle record is page-only on every rank.
    std::optional<IndexEntry> middle;
    for (const IndexEntry& e : c.store().index().Entries()) {
      if (e.key.consumed == 1600) middle = e;
    }
    ASSERT_TRUE(middle.has_value());
    EXPECT_EQ(middle->row, RowPresence::kPageOnly);
    for (uint32_t r = 0; r < c.world_size(); ++r) {
      EXPECT_EQ(c.Files(r).at(middle->key.ToFileStem() + ".ckpt"),
                RecordFileBytes(layout, {.tail_pages = 10, .has_row = false}))
          << "rank " << r;
    }

    // Restores through the store check every rank's planes.
    rt.EvictGpu();
    TurnReport ta = *rt.Turn(a, 10);
    EXPECT_TRUE(ta.host_hit);
    EXPECT_EQ(ta.host_reused_tokens, 2000u);
    TurnReport tb = *rt.Turn(b, 10);
    EXPECT_TRUE(tb.host_hit);
    EXPECT_EQ(rt.stats().mismatches, 0u);
    EXPECT_GT(rt.stats().restored_bytes, 0u);
    ASSERT_TRUE(rt.WaitForStores().ok());
    ASSERT_TRUE(c.store().WaitIdle(kIdleBound));
    c.ExpectSameFilesEverywhere();
    for (const PeerLinkReport& p : c.coordinator().PeerLinks()) {
      EXPECT_EQ(p.state, "up") << RankName(p.peer);
      EXPECT_TRUE(p.errors_by_reason.empty()) << RankName(p.peer);
      EXPECT_GT(p.jobs_sent, 0u);
    }
    ASSERT_TRUE(c.Close().ok());
  }

  // Every rank restarts on its files; the agreement keeps every record.
  Cluster c(dir.path(), options);
  STRATA_OK_OR_SKIP_DIRECT_IO(c.Start());
  const AgreementCounts& agreed = c.coordinator().join_stats().agreement;
  EXPECT_EQ(agreed.kept, c.Files(0).size());
  EXPECT_EQ(agreed.missing + agreed.mismatched + agreed.orphaned + agreed.rows_dropped, 0u);
  EXPECT_GE(c.store().index().size(), 4u);
  c.ExpectSameFilesEverywhere();
  SyntheticRuntime rt(c.all_planes(), &c.store());  // fresh planes: every byte comes from disk
  const uint32_t a = rt.NewConversation();
  TurnReport ta = *rt.Turn(a, 2000);
  EXPECT_TRUE(ta.host_hit);
  EXPECT_EQ(ta.host_reused_tokens, 2000u);
  const uint32_t b = rt.Branch(a, 500);
  TurnReport tb = *rt.Turn(b, 300);
  EXPECT_TRUE(tb.host_hit);
  EXPECT_EQ(tb.host_reused_tokens, 800u);
  EXPECT_EQ(rt.stats().mismatches, 0u);
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(c.Close().ok());
}

// `turns` turns of 300 tokens of `conversation`, each stored, then a GPU
// eviction and a turn that must restore all `reused` tokens byte-exact.
void StoreTurnsThenRestore(SyntheticRuntime& rt, uint32_t conversation, int turns,
                           uint64_t reused) {
  for (int turn = 0; turn < turns; ++turn) {
    ASSERT_TRUE(rt.Turn(conversation, 300).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
  }
  rt.EvictGpu();
  Result<TurnReport> t = rt.Turn(conversation, 10);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->host_hit);
  EXPECT_EQ(t->host_reused_tokens, reused);
  EXPECT_EQ(rt.stats().mismatches, 0u);
  ASSERT_TRUE(rt.WaitForStores().ok());
}

// Wake-ups both ends' record links saved by spinning: rank zero's link to
// rank 1, and rank 1's link to rank zero.
std::pair<uint64_t, uint64_t> LinkSpinHits(Cluster& c) {
  uint64_t rank_zero = 0;
  for (const PeerLinkReport& p : c.coordinator().PeerLinks()) rank_zero += p.link.idle_spin_hits;
  return {rank_zero, c.agent(1).stats().link_idle_spin_hits};
}

TEST(MultiRankTest, RecordLinksThatSpinServeByteExactAndCountTheFramesTheyCaught) {
  const ScopedSpinSlots slots(8);  // both record links find a slot, beside any disk thread's
  ScratchDir dir;
  ClusterOptions options;
  options.world_size = 2;
  // Longer than any gap between this test's jobs, however slow the machine.
  options.link_idle_spin = std::chrono::seconds(1);
  Cluster c(dir.path(), options);
  STRATA_OK_OR_SKIP_DIRECT_IO(c.Start());
  SyntheticRuntime rt(c.all_planes(), &c.store());
  const uint32_t a = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(a, 300).ok());
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(c.store().WaitIdle(kIdleBound));
  // What the join and the first store counted; the jobs below come on links
  // that spin since their last frame.
  const auto [zero_before, peer_before] = LinkSpinHits(c);
  ASSERT_NO_FATAL_FAILURE(StoreTurnsThenRestore(rt, a, 3, 1200));
  ASSERT_TRUE(c.store().WaitIdle(kIdleBound));
  // A spin's count is recorded just after the work it found ran: wait for it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto hits = LinkSpinHits(c);
  while ((hits.first <= zero_before || hits.second <= peer_before) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    hits = LinkSpinHits(c);
  }
  EXPECT_GT(hits.first, zero_before) << "rank zero's link caught no JobDone while spinning";
  EXPECT_GT(hits.second, peer_before) << "rank 1's link caught no Job while spinning";
  for (const PeerLinkReport& p : c.coordinator().PeerLinks()) {
    EXPECT_TRUE(p.errors_by_reason.empty());
  }
  ASSERT_TRUE(c.Close().ok());
}

TEST(MultiRankTest, RankZeroLinksOnOneSharedThreadServeByteExact) {
  ScratchDir dir;
  ClusterOptions options;
  options.world_size = 4;
  options.shared_link_thread = true;
  Cluster c(dir.path(), options);
  STRATA_OK_OR_SKIP_DIRECT_IO(c.Start());
  ASSERT_TRUE(c.coordinator().SharedLinkThreadStats().has_value());
  SyntheticRuntime rt(c.all_planes(), &c.store());
  const uint32_t a = rt.NewConversation();
  ASSERT_NO_FATAL_FAILURE(StoreTurnsThenRestore(rt, a, 3, 900));
  const std::vector<PeerLinkReport> links = c.coordinator().PeerLinks();
  ASSERT_EQ(links.size(), 3u);
  for (const PeerLinkReport& p : links) {
    EXPECT_EQ(p.state, "up");
    EXPECT_GT(p.jobs_done, 0u) << RankName(p.peer);
    EXPECT_TRUE(p.errors_by_reason.empty());
  }
  EXPECT_EQ(c.coordinator().SharedLinkThreadStats()->handler_throws, 0u);
  ASSERT_TRUE(c.Close().ok());
}

TEST(MultiRankTest, EvictionUnlinksTheRecordOnEveryRank) {
  ScratchDir dir;
  const RecordLayout layout(testing::RankGeometryOf());
  const uint64_t one = RecordFileBytes(layout, {.tail_pages = 10});
  ClusterOptions options;
  options.disk_limit_bytes = 3 * one + one / 2;
  Cluster c(dir.path(), options);
  STRATA_OK_OR_SKIP_DIRECT_IO(c.Start());
  SyntheticRuntime rt(c.all_planes(), &c.store());
  std::vector<uint32_t> convs;
  for (int i = 0; i < 6; ++i) {
    convs.push_back(rt.NewConversation());
    ASSERT_TRUE(rt.Turn(convs.back(), 640).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
  }
  ASSERT_TRUE(c.store().WaitIdle(kIdleBound));
  EXPECT_GT(c.store().Stats().disk.evicted_total, 0u);
  EXPECT_LE(c.store().used_bytes(), options.disk_limit_bytes);
  EXPECT_EQ(c.Files(0).size(), c.store().index().size());
  c.ExpectSameFilesEverywhere();
  rt.EvictGpu();
  EXPECT_FALSE(rt.Turn(convs[0], 5)->host_hit);
  EXPECT_TRUE(rt.Turn(convs[5], 5)->host_hit);
  EXPECT_EQ(rt.stats().mismatches, 0u);
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(c.Close().ok());
}

TEST(MultiRankTest, TheDiskLimitIsTheSmallestAmongRanks) {
  ScratchDir dir;
  Cluster c(dir.path());
  for (uint32_t r = 1; r < c.world_size(); ++r) {
    RankAgentOptions o = c.AgentOptionsFor(r);
    o.disk_limit_bytes = (uint64_t{64} << 20) * r;
    STRATA_OK_OR_SKIP_DIRECT_IO(
        c.StartAgent(r, o, JoinThroughRendezvous(c.rendezvous(), RankId(r), c.world_size())));
  }
  STRATA_OK_OR_SKIP_DIRECT_IO(c.StartCoordinator(c.CoordinatorOptionsFor()));
  EXPECT_EQ(c.coordinator().join_stats().disk_limit_bytes, uint64_t{64} << 20);
  ASSERT_TRUE(c.Close().ok());
}

// Rewrites a record file's header with another bucket digest, as a rank
// whose file disagrees with the others would have it.
void ChangeBucket(const std::string& path) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.good()) << path;
  std::vector<std::byte> bytes(kRecordHeaderBytes);
  f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  Result<RecordHeader> h = DecodeRecordHeader(bytes);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  h->bucket[0] ^= 0xff;
  ASSERT_TRUE(EncodeRecordHeader(*h, bytes).ok());
  f.seekp(0);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good());
}

TEST(MultiRankTest, FilesThatDisagreeAtJoinAreDroppedOnEveryRank) {
  ScratchDir dir;
  const RecordLayout layout(testing::RankGeometryOf());
  // Records A, B (1280 tokens), C, D (its only child), E.
  {
    Cluster c(dir.path());
    STRATA_OK_OR_SKIP_DIRECT_IO(c.Start());
    SyntheticRuntime rt(c.all_planes(), &c.store());
    for (uint64_t tokens : {640, 1280, 640}) {
      ASSERT_TRUE(rt.Turn(rt.NewConversation(), tokens).ok());
      ASSERT_TRUE(rt.WaitForStores().ok());
    }
    ASSERT_TRUE(rt.Turn(2, 640).ok());  // D, the only child of C
    ASSERT_TRUE(rt.Turn(rt.NewConversation(), 640).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
    ASSERT_TRUE(c.store().WaitIdle(kIdleBound));
    ASSERT_EQ(rt.stats().stored, 5u);
    ASSERT_EQ(c.Files(0).size(), 5u);
    c.ExpectSameFilesEverywhere();
    ASSERT_TRUE(c.Close().ok());
  }
  // Tell the records apart by their headers: D is the 1280-token record
  // with a parent (C), B the one without.
  Cluster c(dir.path());
  std::string a, b, cc, d, e;
  std::map<PrefixKey, std::string> name_of;
  std::vector<std::pair<std::string, RecordHeader>> headers;
  for (const auto& [name, size] : c.Files(0)) {
    std::ifstream f(c.RecordDir(0) + "/" + name, std::ios::binary);
    std::vector<std::byte> bytes(kRecordHeaderBytes);
    f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    Result<RecordHeader> h = DecodeRecordHeader(bytes);
    ASSERT_TRUE(h.ok()) << name << ": " << h.status().ToString();
    name_of[h->key] = name;
    headers.emplace_back(name, *h);
  }
  for (const auto& [name, h] : headers) {
    if (h.key.consumed == 1280) (h.parent ? d : b) = name;
    if (h.key.consumed == 1280 && h.parent) cc = name_of.at(*h.parent);
  }
  for (const auto& [name, h] : headers) {
    if (h.key.consumed == 640 && name != cc) (a.empty() ? a : e) = name;
  }
  ASSERT_FALSE(a.empty() || b.empty() || cc.empty() || d.empty() || e.empty());
  // Rank 1 lost A's row; rank 2 lost B and C (and with C, its child D);
  // rank 1's E has another header.
  std::filesystem::resize_file(c.RecordDir(1) + "/" + a,
                               RecordFileBytes(layout, {.tail_pages = 10, .has_row = false}));
  std::filesystem::remove(c.RecordDir(2) + "/" + b);
  std::filesystem::remove(c.RecordDir(2) + "/" + cc);
  ChangeBucket(c.RecordDir(1) + "/" + e);

  STRATA_OK_OR_SKIP_DIRECT_IO(c.Start());
  const AgreementCounts& agreed = c.coordinator().join_stats().agreement;
  EXPECT_EQ(agreed.kept, 1u);          // A, without its row
  EXPECT_EQ(agreed.rows_dropped, 1u);  // A's
  EXPECT_EQ(agreed.missing, 3u);       // B, C, and D (rank 2's scan dropped the orphan)
  EXPECT_EQ(agreed.mismatched, 1u);    // E
  ASSERT_TRUE(c.store().WaitIdle(kIdleBound));
  c.ExpectSameFilesEverywhere();
  for (uint32_t r = 0; r < c.world_size(); ++r) {
    std::map<std::string, uint64_t> now = c.Files(r);
    EXPECT_EQ(now.count(b) + now.count(cc) + now.count(d) + now.count(e), 0u) << "rank " << r;
    if (now.count(a) != 0) {
      EXPECT_EQ(now.at(a), RecordFileBytes(layout, {.tail_pages = 10, .has_row = false}));
    }
  }
  ASSERT_TRUE(c.Close().ok());
}

}  // namespace
}  // namespace strata
