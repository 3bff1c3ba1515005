// PrefixIndex: leaf-first LRU eviction, compaction, expiry and the startup
// rebuild, with 64-, 128- and 256-token pages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "store/index/index.h"
#include "tests/unit/store/index/index_test_util.h"

namespace strata {
namespace {

using namespace index_test;  // NOLINT(google-build-using-namespace)
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr uint64_t kMinute = PrefixIndex::kExpirySweepIntervalMs;

class IndexEvictTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  uint32_t pt() const { return GetParam(); }

  void Publish(const PrefixHistory& h, uint64_t c, std::optional<uint64_t> p, uint64_t now_ms = 0) {
    Result<InsertResult> r = index_.Insert(RecordAt(h, c, p), now_ms);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  // Evicts until nothing can go; returns the consumed counts in order, with
  // compactions as -count.
  std::vector<int64_t> EvictAll(const PrefixIndex::Predicate& evictable = kAny) {
    std::vector<int64_t> order;
    for (EvictionDecision d = index_.EvictOne(evictable); !d.empty();
         d = index_.EvictOne(evictable)) {
      EXPECT_TRUE(index_.CheckInvariants().ok()) << index_.CheckInvariants().ToString();
      for (const RemovedRecord& r : d.removed)
        order.push_back(static_cast<int64_t>(r.key.consumed));
      if (d.compacted) order.push_back(-static_cast<int64_t>(d.compacted->key.consumed));
    }
    return order;
  }

  PrefixIndex index_{GetParam()};
  std::vector<Token> tokens_ = Tokens(2000, 11);
  PrefixHistory h_{tokens_};
};

INSTANTIATE_TEST_SUITE_P(PageTokens, IndexEvictTest, ::testing::Values(64u, 128u, 256u));

TEST_P(IndexEvictTest, LeastRecentlyUsedLeafFirst) {
  PrefixHistory u(Tokens(500, 12));
  PrefixHistory v(Tokens(500, 13));
  Publish(h_, 300, std::nullopt);  // P
  Publish(h_, 900, 300);           // Q, P's child
  Publish(u, 200, std::nullopt);
  Publish(v, 250, std::nullopt);
  ASSERT_TRUE(index_.Touch(u.key_at(200), 10).ok());
  // Leaves by access: Q, v, u. P goes only after its child, yet keeps its own
  // (oldest) place in the order once it is a leaf.
  EXPECT_THAT(EvictAll(), ElementsAre(900, 300, 250, 200));
  EXPECT_EQ(index_.size(), 0u);
}

TEST_P(IndexEvictTest, PinnedAndRefusedLeavesSurvive) {
  PrefixHistory x(Tokens(500, 14));
  PrefixHistory y(Tokens(500, 15));
  PrefixHistory z(Tokens(500, 16));
  Publish(x, 100, std::nullopt);
  Publish(y, 200, std::nullopt);
  Publish(z, 300, std::nullopt);
  ASSERT_TRUE(index_.Pin(x.key_at(100)).ok());
  const PrefixKey refused = y.key_at(200);
  auto not_y = [&](const IndexEntry& e) { return e.key != refused; };
  EXPECT_THAT(EvictAll(not_y), ElementsAre(300));
  EXPECT_TRUE(index_.EvictOne(not_y).empty());
  ASSERT_TRUE(index_.Unpin(x.key_at(100)).ok());
  EXPECT_THAT(EvictAll(not_y), ElementsAre(100));
  EXPECT_TRUE(index_.Contains(refused));
}

TEST_P(IndexEvictTest, CompactionDropsLookupMatchesButKeepsChainPages) {
  Publish(h_, 200, std::nullopt);  // R: a root keeps its row
  Publish(h_, 900, 200);           // S
  ASSERT_TRUE(index_.Pin(h_.key_at(900)).ok());
  EvictionDecision d = index_.EvictOne(kAny);
  EXPECT_THAT(d.removed, IsEmpty());
  ASSERT_TRUE(d.compacted.has_value());
  EXPECT_EQ(*d.compacted, (RowDrop{h_.key_at(200), NodeLocation(200)}));
  EXPECT_TRUE(index_.EvictOne(kAny).empty());  // nothing more to compact

  PrefixHistory fork_500(Fork(tokens_, 500, 1500, 17));
  EXPECT_FALSE(index_.Lookup(fork_500, 0, UINT64_MAX, kReadyOnly).has_value());
  std::optional<LookupHit> hit = index_.Lookup(h_, 0, UINT64_MAX, kReadyOnly);
  ASSERT_TRUE(hit.has_value());
  EXPECT_THAT(ChainCounts(*hit), ElementsAre(200u, 900u));
  EXPECT_EQ(hit->chain[0].row, RowPresence::kPageOnly);
  EXPECT_EQ(hit->chain[0].tail_page_count, 200 / pt());
  EXPECT_EQ(hit->restore_page_count(), 900 / pt());

  // Its last child gone, the page-only record goes with it.
  ASSERT_TRUE(index_.Unpin(h_.key_at(900)).ok());
  EXPECT_THAT(EvictAll(), ElementsAre(900, 200));
}

TEST_P(IndexEvictTest, CompactionPicksLeastRecentlyUsedAllowedAncestor) {
  PrefixHistory a(Tokens(1000, 18));
  PrefixHistory b(Tokens(1000, 19));
  PrefixHistory c(Tokens(1000, 20));
  for (const PrefixHistory* h : {&a, &b, &c}) {
    Publish(*h, 100, std::nullopt);
    Publish(*h, 600, 100);
    ASSERT_TRUE(index_.Pin(h->key_at(600)).ok());
  }
  ASSERT_TRUE(index_.Pin(a.key_at(100)).ok());
  const PrefixKey refused = b.key_at(100);
  auto not_b = [&](const IndexEntry& e) { return e.key != refused; };
  EvictionDecision d = index_.EvictOne(not_b);
  ASSERT_TRUE(d.compacted.has_value());
  EXPECT_EQ(d.compacted->key, c.key_at(100));
  EXPECT_TRUE(index_.EvictOne(not_b).empty());
}

TEST_P(IndexEvictTest, RefusedPageOnlyAncestorStays) {
  Publish(h_, 100, std::nullopt);
  Publish(h_, 450, 100);
  Publish(h_, 900, 450);  // 450 becomes page-only
  const PrefixKey keep = h_.key_at(450);
  auto not_450 = [&](const IndexEntry& e) { return e.key != keep; };
  EvictionDecision d = index_.EvictOne(not_450);
  EXPECT_THAT(RemovedCounts(d.removed), ElementsAre(900u));
  // Now a childless page-only leaf: it goes when allowed, before its parent.
  EXPECT_THAT(EvictAll(), ElementsAre(450, 100));
}

TEST_P(IndexEvictTest, ExpiryRunsOncePerIntervalAndAtMost64Leaves) {
  std::vector<PrefixHistory> histories;
  for (uint64_t i = 0; i < 100; ++i) histories.emplace_back(Tokens(200, 100 + i));
  for (const PrefixHistory& h : histories) Publish(h, 150, std::nullopt, 0);
  const uint64_t max_age = 1'000;
  uint64_t now = 10 * kMinute;
  ExpirySweep sweep = index_.Expire(now, max_age, kAny);
  EXPECT_TRUE(sweep.ran);
  EXPECT_EQ(sweep.expired_leaves, 64u);
  EXPECT_EQ(sweep.removed.size(), 64u);
  EXPECT_EQ(index_.size(), 36u);
  // The oldest went first.
  EXPECT_EQ(sweep.removed.front().key, histories.front().key_at(150));
  EXPECT_FALSE(index_.Contains(histories[63].key_at(150)));
  EXPECT_TRUE(index_.Contains(histories[64].key_at(150)));

  sweep = index_.Expire(now + kMinute - 1, max_age, kAny);
  EXPECT_FALSE(sweep.ran);
  EXPECT_EQ(index_.size(), 36u);
  sweep = index_.Expire(now + kMinute, max_age, kAny);
  EXPECT_TRUE(sweep.ran);
  EXPECT_EQ(sweep.expired_leaves, 36u);
  EXPECT_EQ(index_.size(), 0u);
}

TEST_P(IndexEvictTest, ExpiryStopsAtTheFirstFreshLeaf) {
  PrefixHistory a(Tokens(300, 21));
  PrefixHistory b(Tokens(300, 22));
  PrefixHistory c(Tokens(300, 23));
  PrefixHistory d(Tokens(300, 24));
  Publish(a, 100, std::nullopt, 0);
  Publish(b, 100, std::nullopt, 0);
  Publish(c, 100, std::nullopt, 5'000);
  Publish(d, 100, std::nullopt, 0);  // old, but newer in access order than c
  ASSERT_TRUE(index_.Pin(a.key_at(100)).ok());
  const uint64_t now = 4 * kMinute;
  ExpirySweep sweep = index_.Expire(now, now - 1'000, kAny);
  // a is pinned (skipped), b expires, c is fresh: the sweep stops there.
  EXPECT_THAT(RemovedCounts(sweep.removed), ElementsAre(100u));
  EXPECT_EQ(sweep.removed[0].key, b.key_at(100));
  EXPECT_TRUE(index_.Contains(a.key_at(100)));
  EXPECT_TRUE(index_.Contains(d.key_at(100)));
}

TEST_P(IndexEvictTest, ExpirySkipsInteriorAndRefusedRecords) {
  PrefixHistory other(Tokens(600, 25));
  Publish(h_, 100, std::nullopt, 0);
  Publish(h_, 700, 100, 0);
  Publish(other, 500, std::nullopt, 0);
  const PrefixKey refused = h_.key_at(700);
  auto not_700 = [&](const IndexEntry& e) { return e.key != refused; };
  ExpirySweep sweep = index_.Expire(10 * kMinute, 1'000, not_700);
  // 100 is interior, 700 refused: only the other history's leaf goes.
  EXPECT_THAT(RemovedCounts(sweep.removed), ElementsAre(500u));
  EXPECT_EQ(index_.size(), 2u);
}

TEST_P(IndexEvictTest, PageOnlyAncestorsExpireWithTheirLastChild) {
  PrefixHistory fork(Fork(tokens_, 700, 1300, 26));
  Publish(h_, 100, std::nullopt, 0);  // A, a root: keeps its row
  Publish(h_, 500, 100, 0);           // B
  Publish(h_, 1000, 500, 0);          // C: B becomes page-only
  Publish(h_, 1500, 1000, 0);         // D: C becomes page-only
  Publish(fork, 1200, 500, 0);        // E: B's second child
  EXPECT_EQ(index_.Find(h_.key_at(500))->row, RowPresence::kPageOnly);
  EXPECT_EQ(index_.Find(h_.key_at(1000))->row, RowPresence::kPageOnly);
  const uint64_t now = 10 * kMinute;
  ExpirySweep sweep = index_.Expire(now, 1'000, kAny);
  // D goes with C; B waits for E, its last child, then goes with it. A, left
  // a leaf older in access order than E, waits for the next sweep.
  EXPECT_THAT(RemovedCounts(sweep.removed), ElementsAre(1500u, 1000u, 1200u, 500u));
  EXPECT_EQ(sweep.expired_leaves, 2u);
  EXPECT_EQ(index_.size(), 1u);
  sweep = index_.Expire(now + kMinute, 1'000, kAny);
  EXPECT_THAT(RemovedCounts(sweep.removed), ElementsAre(100u));
  EXPECT_TRUE(index_.CheckInvariants().ok());
}

TEST_P(IndexEvictTest, UseRefreshesTheRecordAndItsAncestors) {
  Publish(h_, 100, std::nullopt, 0);
  Publish(h_, 500, 100, 0);
  Publish(h_, 1000, 500, 0);
  const uint64_t now = 10 * kMinute;
  ASSERT_TRUE(index_.Touch(h_.key_at(1000), now).ok());
  for (uint64_t c : {100u, 500u, 1000u}) EXPECT_EQ(index_.Find(h_.key_at(c))->last_use_ms, now);
  EXPECT_EQ(index_.Expire(now + 500, 1'000, kAny).expired_leaves, 0u);
  EXPECT_EQ(index_.size(), 3u);
}

TEST_P(IndexEvictTest, LoadCommittedRebuildsPrunesAndReportsOrphans) {
  PrefixHistory other(Tokens(2000, 27));
  auto rec = [&](const PrefixHistory& h, uint64_t c, std::optional<uint64_t> p, uint64_t mtime,
                 RowPresence row = RowPresence::kPresent) {
    CommittedRecord r;
    r.key = h.key_at(c);
    if (p) r.parent = h.key_at(*p);
    r.bucket_digest = h.bucket_digest(c);
    r.tail_page_count = static_cast<uint32_t>(c / pt() - (p ? *p / pt() : 0));
    r.location = NodeLocation(c);
    r.row = row;
    r.last_use_ms = mtime;
    return r;
  };
  std::vector<CommittedRecord> records = {
      rec(h_, 1500, 1000, 30),                          // survives
      rec(h_, 1000, 500, 20, RowPresence::kPageOnly),   // page-only, has a child
      rec(h_, 500, 100, 90),                            // newer than its child's file
      rec(h_, 100, std::nullopt, 10),                   // root
      rec(h_, 1800, 1500, 40, RowPresence::kPageOnly),  // childless page-only: pruned
      rec(other, 700, 300, 50),                         // parent missing: orphan
      rec(other, 900, 700, 60),                         // orphan's child
  };
  CommittedRecord bad = rec(other, 1200, std::nullopt, 70);
  bad.tail_page_count += 1;
  records.push_back(bad);
  records.push_back(rec(other, 1300, 1200, 80));  // child of a rejected record

  index_.Reserve(100);
  const size_t reserved = index_.MemoryBytes();
  Result<LoadReport> report = index_.LoadCommitted(records);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_LE(index_.MemoryBytes() - reserved, 100u * 64);  // the reservation held
  EXPECT_TRUE(index_.CheckInvariants().ok()) << index_.CheckInvariants().ToString();
  ASSERT_EQ(report->rejected.size(), 1u);
  EXPECT_EQ(report->rejected[0].key, other.key_at(1200));
  EXPECT_EQ(report->rejected[0].why.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(report->orphans,
              UnorderedElementsAre(other.key_at(700), other.key_at(900), other.key_at(1300)));
  EXPECT_THAT(RemovedCounts(report->pruned), ElementsAre(1800u));
  EXPECT_EQ(index_.size(), 4u);
  // Every record is committed; a parent is at least as fresh as its children.
  EXPECT_EQ(index_.Find(h_.key_at(1500))->state, TransferState::kReady);
  EXPECT_EQ(index_.Find(h_.key_at(100))->last_use_ms, 90u);
  EXPECT_EQ(index_.Find(h_.key_at(1000))->last_use_ms, 30u);
  // The chain restores through the page-only record.
  std::optional<LookupHit> hit = index_.Lookup(h_, 0, UINT64_MAX, kReadyOnly);
  EXPECT_THAT(ChainCounts(*hit), ElementsAre(100u, 500u, 1000u, 1500u));
  // Access order follows each record's own time: compaction picks the root
  // (10) before 500 (90) once the only leaf is pinned.
  ASSERT_TRUE(index_.Pin(h_.key_at(1500)).ok());
  EvictionDecision d = index_.EvictOne(kAny);
  ASSERT_TRUE(d.compacted.has_value());
  EXPECT_EQ(d.compacted->key, h_.key_at(100));

  EXPECT_EQ(index_.LoadCommitted({}).status().code(), StatusCode::kFailedPrecondition);
}

TEST_P(IndexEvictTest, LoadPrunesPageOnlyChainsLeftChildless) {
  auto rec = [&](uint64_t c, std::optional<uint64_t> p, RowPresence row) {
    CommittedRecord r;
    r.key = h_.key_at(c);
    if (p) r.parent = h_.key_at(*p);
    r.bucket_digest = h_.bucket_digest(c);
    r.tail_page_count = static_cast<uint32_t>(c / pt() - (p ? *p / pt() : 0));
    r.row = row;
    return r;
  };
  Result<LoadReport> report = index_.LoadCommitted({
      rec(100, std::nullopt, RowPresence::kPresent),
      rec(500, 100, RowPresence::kPageOnly),
      rec(900, 500, RowPresence::kPageOnly),
  });
  ASSERT_TRUE(report.ok());
  EXPECT_THAT(RemovedCounts(report->pruned), ElementsAre(900u, 500u));
  EXPECT_EQ(index_.size(), 1u);
  EXPECT_EQ(index_.Find(h_.key_at(100))->child_count, 0u);
}

}  // namespace
}  // namespace strata
