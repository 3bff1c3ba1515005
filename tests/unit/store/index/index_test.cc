// PrefixIndex: insert, lookup and the page-only rule, with 64-, 128- and
// 256-token pages (seed 3.1 step 4).
#include "store/index/index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/store/index/index_test_util.h"

namespace strata {
namespace {

using namespace index_test;  // NOLINT(google-build-using-namespace)
using ::testing::ElementsAre;

class IndexTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  uint32_t pt() const { return GetParam(); }

  InsertResult Publish(const PrefixHistory& h, uint64_t c, std::optional<uint64_t> p,
                       TransferState state = TransferState::kReady, uint64_t now_ms = 0) {
    Result<InsertResult> r = index_.Insert(RecordAt(h, c, p, state), now_ms);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(index_.CheckInvariants().ok()) << index_.CheckInvariants().ToString();
    return r.ok() ? *r : InsertResult{};
  }

  std::optional<LookupHit> Lookup(const PrefixHistory& h, uint64_t resident,
                                  uint64_t max_consumed = UINT64_MAX,
                                  StateSet restorable = kReadyOnly) {
    std::optional<LookupHit> hit = index_.Lookup(h, resident, max_consumed, restorable);
    if (hit) {
      // The chain restores exactly the pages the GPU lacks.
      uint64_t c = hit->endpoint().consumed;
      EXPECT_EQ(hit->restore_page_count(), c / pt() - resident / pt());
      EXPECT_EQ(hit->chain.back().row, RowPresence::kPresent);
      EXPECT_EQ(hit->chain.back().key, h.key_at(c));
    }
    return hit;
  }

  PrefixIndex index_{GetParam()};
  std::vector<Token> tokens_ = Tokens(2000, 1);
  PrefixHistory h_{tokens_};
};

INSTANTIATE_TEST_SUITE_P(PageTokens, IndexTest, ::testing::Values(64u, 128u, 256u));

TEST_P(IndexTest, UnalignedEndpointsMatchOnlyTheirOwnHistory) {
  for (uint64_t c : {100u, 333u, 640u, 1001u}) Publish(h_, c, std::nullopt);
  EXPECT_EQ(Lookup(h_, 0)->endpoint().consumed, 1001u);
  EXPECT_EQ(Lookup(h_, 0, 1000)->endpoint().consumed, 640u);
  EXPECT_EQ(Lookup(h_, 0, 639)->endpoint().consumed, 333u);
  EXPECT_EQ(Lookup(h_, 0, 332)->endpoint().consumed, 100u);
  EXPECT_FALSE(Lookup(h_, 0, 99).has_value());
  // An endpoint must lie past what the GPU holds.
  EXPECT_FALSE(Lookup(h_, 333, 639).has_value());
  // A history that leaves this one inside a block misses the records past it,
  // even those filed under a bucket it shares.
  PrefixHistory fork_500(Fork(tokens_, 500, 1500, 2));
  EXPECT_EQ(Lookup(fork_500, 0)->endpoint().consumed, 333u);
  PrefixHistory fork_1000(Fork(tokens_, 1000, 1000, 3));
  EXPECT_EQ(fork_1000.bucket_digest(1001), h_.bucket_digest(1001));
  EXPECT_EQ(Lookup(fork_1000, 0)->endpoint().consumed, 640u);
  // A root record is its whole chain; the GPU's pages are skipped.
  std::optional<LookupHit> hit = Lookup(h_, 333);
  ASSERT_TRUE(hit.has_value());
  EXPECT_THAT(ChainCounts(*hit), ElementsAre(1001u));
  EXPECT_EQ(hit->chain[0].tail_page_count, 1001 / pt());
  EXPECT_EQ(hit->base_consumed, 0u);
  EXPECT_EQ(hit->skip_pages, 333 / pt());
}

TEST_P(IndexTest, ShortHistoryAndRootBucket) {
  Publish(h_, 5, std::nullopt);
  Publish(h_, 63, std::nullopt);
  Publish(h_, 64, std::nullopt);
  EXPECT_EQ(Lookup(h_, 0, 63)->endpoint().consumed, 63u);
  EXPECT_EQ(Lookup(h_, 0)->endpoint().consumed, 64u);
  EXPECT_FALSE(Lookup(h_, 5, 62).has_value());
  PrefixHistory short_history(std::vector<Token>(tokens_.begin(), tokens_.begin() + 40));
  EXPECT_EQ(Lookup(short_history, 0)->endpoint().consumed, 5u);
  EXPECT_FALSE(Lookup(short_history, 40).has_value());
}

TEST_P(IndexTest, TailPagesSinceParentOrWholeChainForARoot) {
  InsertResult root = Publish(h_, 130, std::nullopt, TransferState::kInFlight);
  EXPECT_TRUE(root.root);
  EXPECT_EQ(root.tail_page_count, 130 / pt());
  InsertResult child = Publish(h_, 700, 130, TransferState::kInFlight);
  EXPECT_FALSE(child.root);
  EXPECT_EQ(child.tail_page_count, 700 / pt() - 130 / pt());
  // Sharing its parent's last page, a record owns no pages.
  InsertResult same_page = Publish(h_, 701, 700, TransferState::kInFlight);
  EXPECT_EQ(same_page.tail_page_count, 0u);
  // A parent the index does not hold makes a root record.
  InsertResult orphaned = Publish(h_, 1500, 1400, TransferState::kInFlight);
  EXPECT_TRUE(orphaned.root);
  EXPECT_EQ(orphaned.tail_page_count, 1500 / pt());
  EXPECT_EQ(index_.Find(h_.key_at(1500))->parent, std::nullopt);
}

TEST_P(IndexTest, DedupeReportsPresentAndInFlight) {
  Publish(h_, 300, std::nullopt, TransferState::kInFlight);
  Result<InsertResult> again = index_.Insert(RecordAt(h_, 300, std::nullopt), 5);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->outcome, InsertOutcome::kAlreadyPresent);
  EXPECT_EQ(again->state, TransferState::kInFlight);
  ASSERT_TRUE(index_.SetState(h_.key_at(300), TransferState::kReady).ok());
  again = index_.Insert(RecordAt(h_, 300, std::nullopt), 6);
  EXPECT_EQ(again->outcome, InsertOutcome::kAlreadyPresent);
  EXPECT_EQ(again->state, TransferState::kReady);
  EXPECT_EQ(index_.size(), 1u);
}

TEST_P(IndexTest, FeasibleThroughTheResidentAncestor) {
  Publish(h_, 130, std::nullopt);
  Publish(h_, 700, 130);
  Publish(h_, 1300, 700);
  std::optional<LookupHit> hit = Lookup(h_, 0);
  ASSERT_TRUE(hit.has_value());
  EXPECT_THAT(ChainCounts(*hit), ElementsAre(130u, 700u, 1300u));
  EXPECT_EQ(hit->chain[0].tail_page_count, 130 / pt());
  EXPECT_EQ(hit->chain[1].tail_page_count, 700 / pt() - 130 / pt());
  EXPECT_EQ(hit->chain[2].tail_page_count, 1300 / pt() - 700 / pt());
  EXPECT_EQ(hit->skip_pages, 0u);

  hit = Lookup(h_, 200);  // the chain stops at the record at or below a
  EXPECT_THAT(ChainCounts(*hit), ElementsAre(700u, 1300u));
  EXPECT_EQ(hit->base_consumed, 130u);
  EXPECT_EQ(hit->skip_pages, 200 / pt() - 130 / pt());
  hit = Lookup(h_, 700);
  EXPECT_THAT(ChainCounts(*hit), ElementsAre(1300u));
  EXPECT_EQ(hit->skip_pages, 0u);
  hit = Lookup(h_, 900);
  EXPECT_THAT(ChainCounts(*hit), ElementsAre(1300u));
  EXPECT_EQ(hit->base_consumed, 700u);
  EXPECT_EQ(hit->skip_pages, 900 / pt() - 700 / pt());

  // An ancestor above a that cannot be restored makes the chain infeasible;
  // the next candidate down wins. At or below a it does not matter.
  ASSERT_TRUE(index_.SetState(h_.key_at(700), TransferState::kInFlight).ok());
  EXPECT_THAT(ChainCounts(*Lookup(h_, 0)), ElementsAre(130u));
  EXPECT_THAT(ChainCounts(*Lookup(h_, 800)), ElementsAre(1300u));
  // A store that restores from more states sees more.
  hit = Lookup(h_, 0, UINT64_MAX, {TransferState::kInFlight, TransferState::kReady});
  EXPECT_THAT(ChainCounts(*hit), ElementsAre(130u, 700u, 1300u));
}

TEST_P(IndexTest, RestorableStatesGateCandidates) {
  Publish(h_, 400, std::nullopt, TransferState::kParked);
  EXPECT_FALSE(Lookup(h_, 0).has_value());
  const StateSet composite_disk{TransferState::kParked, TransferState::kSpilling,
                                TransferState::kReady};
  EXPECT_EQ(Lookup(h_, 0, UINT64_MAX, composite_disk)->endpoint().consumed, 400u);
  ASSERT_TRUE(index_.SetState(h_.key_at(400), TransferState::kInFlight).ok());
  EXPECT_FALSE(Lookup(h_, 0, UINT64_MAX, composite_disk).has_value());
}

TEST_P(IndexTest, PageOnlyNodeStillSuppliesPages) {
  Publish(h_, 100, std::nullopt);
  Publish(h_, 450, 100);
  InsertResult c = Publish(h_, 900, 450);
  // The only child's commit drops its non-root parent's row.
  ASSERT_TRUE(c.parent_row_dropped.has_value());
  EXPECT_EQ(*c.parent_row_dropped, (RowDrop{h_.key_at(450), NodeLocation(450)}));
  EXPECT_EQ(index_.Find(h_.key_at(450))->row, RowPresence::kPageOnly);
  // The page-only record no longer matches...
  PrefixHistory fork_600(Fork(tokens_, 600, 1400, 4));
  EXPECT_THAT(ChainCounts(*Lookup(fork_600, 0)), ElementsAre(100u));
  // ...but still supplies its pages to the chain through it.
  std::optional<LookupHit> hit = Lookup(h_, 0);
  EXPECT_THAT(ChainCounts(*hit), ElementsAre(100u, 450u, 900u));
  EXPECT_EQ(hit->chain[1].row, RowPresence::kPageOnly);
  EXPECT_EQ(hit->chain[1].tail_page_count, 450 / pt() - 100 / pt());
}

TEST_P(IndexTest, PageOnlyRuleSparesRootsBranchesAndUncommittedChildren) {
  Publish(h_, 100, std::nullopt);
  EXPECT_FALSE(Publish(h_, 450, 100).parent_row_dropped.has_value());  // root parent
  // An in-flight child drops nothing until it commits.
  EXPECT_FALSE(Publish(h_, 900, 450, TransferState::kInFlight).parent_row_dropped.has_value());
  EXPECT_EQ(index_.Find(h_.key_at(450))->row, RowPresence::kPresent);
  // A second child makes a branch point, which keeps its row.
  PrefixHistory fork_700(Fork(tokens_, 700, 1300, 5));
  Publish(fork_700, 1200, 450, TransferState::kInFlight);
  Result<std::optional<RowDrop>> drop = index_.SetState(h_.key_at(900), TransferState::kReady);
  ASSERT_TRUE(drop.ok());
  EXPECT_FALSE(drop->has_value());
  EXPECT_EQ(index_.Find(h_.key_at(450))->row, RowPresence::kPresent);
  EXPECT_EQ(index_.Find(h_.key_at(100))->row, RowPresence::kPresent);
}

TEST_P(IndexTest, PageOnlyRuleWaitsForReaders) {
  Publish(h_, 100, std::nullopt);
  Publish(h_, 450, 100);
  ASSERT_TRUE(index_.Pin(h_.key_at(450)).ok());
  ASSERT_TRUE(index_.Pin(h_.key_at(450)).ok());
  EXPECT_FALSE(Publish(h_, 900, 450).parent_row_dropped.has_value());
  EXPECT_TRUE(index_.Find(h_.key_at(450))->row_drop_deferred);
  EXPECT_EQ(Lookup(h_, 0, 899)->endpoint().consumed, 450u);  // row still there
  Result<std::optional<RowDrop>> drop = index_.Unpin(h_.key_at(450));
  EXPECT_FALSE(drop->has_value());
  drop = index_.Unpin(h_.key_at(450));
  ASSERT_TRUE(drop.ok());
  ASSERT_TRUE(drop->has_value());
  EXPECT_EQ((*drop)->key, h_.key_at(450));
  EXPECT_EQ(index_.Find(h_.key_at(450))->row, RowPresence::kPageOnly);
  EXPECT_TRUE(index_.CheckInvariants().ok());
}

TEST_P(IndexTest, DeferredRowDropCancelledByASecondChild) {
  Publish(h_, 100, std::nullopt);
  Publish(h_, 450, 100);
  ASSERT_TRUE(index_.Pin(h_.key_at(450)).ok());
  Publish(h_, 900, 450);
  PrefixHistory fork_700(Fork(tokens_, 700, 1300, 6));
  Publish(fork_700, 1200, 450);
  EXPECT_FALSE(index_.Find(h_.key_at(450))->row_drop_deferred);
  EXPECT_FALSE(index_.Unpin(h_.key_at(450))->has_value());
  EXPECT_EQ(index_.Find(h_.key_at(450))->row, RowPresence::kPresent);
}

TEST_P(IndexTest, ReserveKeepsArraysFromGrowing) {
  index_.Reserve(600);
  const size_t reserved = index_.MemoryBytes();
  std::vector<PrefixHistory> histories;
  for (uint64_t i = 0; i < 200; ++i) histories.emplace_back(Tokens(400, 1000 + i));
  for (const PrefixHistory& h : histories) {
    Publish(h, 100, std::nullopt);
    Publish(h, 250, 100);
    Publish(h, 390, 250);
  }
  EXPECT_EQ(index_.size(), 600u);
  // Only the LRU lists' small entries were added; no array grew.
  EXPECT_LE(index_.MemoryBytes() - reserved, 600u * 64);
  for (const PrefixHistory& h : histories) {
    EXPECT_THAT(ChainCounts(*Lookup(h, 0)), ElementsAre(100u, 250u, 390u));
  }
}

// Large enough that Reserve advises huge pages for the nodes and both hash
// tables: a hint that must change neither the bytes held nor the contents.
TEST_P(IndexTest, LargeReserveHoldsExactlyItsArrays) {
  constexpr size_t kRecords = 40'000;  // 5 MB of nodes, 64 Ki key heads
  index_.Reserve(kRecords);
  const size_t key_heads = 65'536;
  EXPECT_EQ(index_.MemoryBytes(), kRecords * 128 + key_heads * 3 * sizeof(uint32_t));
  std::vector<PrefixHistory> histories;
  for (uint64_t i = 0; i < 50; ++i) histories.emplace_back(Tokens(400, 2000 + i));
  for (const PrefixHistory& h : histories) {
    Publish(h, 100, std::nullopt);
    Publish(h, 390, 100);
  }
  EXPECT_TRUE(index_.CheckInvariants().ok());
  for (const PrefixHistory& h : histories) {
    EXPECT_THAT(ChainCounts(*Lookup(h, 0)), ElementsAre(100u, 390u));
  }
}

TEST_P(IndexTest, BadInputIsAnErrorNotAnAssertion) {
  NewRecord empty = RecordAt(h_, 10, std::nullopt);
  empty.key.consumed = 0;
  EXPECT_EQ(index_.Insert(empty, 0).status().code(), StatusCode::kInvalidArgument);
  NewRecord backwards = RecordAt(h_, 100, 100);
  EXPECT_EQ(index_.Insert(backwards, 0).status().code(), StatusCode::kInvalidArgument);
  const PrefixKey absent = h_.key_at(77);
  EXPECT_EQ(index_.Pin(absent).code(), StatusCode::kNotFound);
  EXPECT_EQ(index_.Unpin(absent).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(index_.Touch(absent, 0).code(), StatusCode::kNotFound);
  EXPECT_EQ(index_.SetState(absent, TransferState::kReady).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(index_.Remove(absent).status().code(), StatusCode::kNotFound);
  Publish(h_, 77, std::nullopt);
  EXPECT_EQ(index_.Unpin(absent).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(index_.size(), 1u);
}

TEST_P(IndexTest, RemoveTakesDescendantsAndIgnoresPins) {
  Publish(h_, 100, std::nullopt);
  Publish(h_, 450, 100, TransferState::kInFlight);
  Publish(h_, 900, 450, TransferState::kInFlight);
  PrefixHistory fork_700(Fork(tokens_, 700, 1300, 7));
  Publish(fork_700, 1200, 450, TransferState::kInFlight);
  ASSERT_TRUE(index_.Pin(h_.key_at(900)).ok());
  Result<std::vector<RemovedRecord>> removed = index_.Remove(h_.key_at(450));
  ASSERT_TRUE(removed.ok());
  ASSERT_EQ(removed->size(), 3u);
  EXPECT_EQ(removed->back().key, h_.key_at(450));  // children first
  EXPECT_EQ(index_.size(), 1u);
  EXPECT_EQ(index_.Find(h_.key_at(100))->child_count, 0u);
  EXPECT_TRUE(index_.CheckInvariants().ok());
  EXPECT_THAT(ChainCounts(*Lookup(h_, 0)), ElementsAre(100u));
}

}  // namespace
}  // namespace strata
