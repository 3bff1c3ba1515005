// PoolCatalog with a real arena, in one process: what one instance puts,
// another claims byte-exact; scopes share nothing; the manager's eviction,
// session ends and claim failures keep the slot lifetime rule.
#include "coordinator/pool/pool_catalog.h"
#include "tests/unit/coordinator/pool/pool_test_data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "coordinator/pool/arena.h"
#include "store/record/checksum.h"

namespace strata::pool {
namespace {

constexpr uint64_t kSlotBytes = 4096;
constexpr uint32_t kPageTokens = 64;

InstanceId Instance(const char* uuid) {
  const std::vector<std::string> gpus{uuid};
  return ComputeInstanceId("test-pool", gpus);
}

using testing::Pattern;
using testing::Tokens;

class PoolCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto arena = Arena::Create("catalog-test", kSlotBytes, kSlots, HugePages::kNever);
    ASSERT_TRUE(arena.ok()) << arena.status().ToString();
    arena_ = std::move(*arena);
  }
  void TearDown() override { EXPECT_TRUE(catalog_.CheckInvariants().ok()); }

  SessionId Open(const char* uuid, uint8_t layout_tag = 1) {
    auto s = catalog_.OpenSession(Instance(uuid), testing::CatalogScope(layout_tag), kPageTokens,
                                  now_ms_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return *s;
  }

  // Puts the prefix of `history` ending at `consumed` (a root record) with
  // `bytes` of pattern `seed`, as an instance writing into the arena would.
  Status Put(SessionId session, const PrefixHistory& history, uint64_t consumed, uint64_t bytes,
             uint8_t seed, PutKind kind = PutKind::kCascade) {
    const std::vector<std::byte> data = Pattern(bytes, seed);
    PutRequest put;
    put.key = history.key_at(consumed);
    put.bucket_digest = history.bucket_digest(consumed);
    put.bytes = bytes;
    put.kind = kind;
    STRATA_ASSIGN_OR_RETURN(PutGrant grant, catalog_.BeginPut(session, put, now_ms_));
    uint64_t at = 0;
    for (SlotId slot : grant.slots) {
      const uint64_t n = std::min<uint64_t>(kSlotBytes, bytes - at);
      std::memcpy(arena_->Slot(slot).data(), data.data() + at, n);
      at += n;
    }
    return catalog_.CommitPut(session, grant.put, Xxh3(data), now_ms_);
  }

  // The request to put the root record of `history` ending at `consumed`.
  static PutRequest RootPut(const PrefixHistory& history, uint64_t consumed, uint64_t bytes) {
    PutRequest put;
    put.key = history.key_at(consumed);
    put.bucket_digest = history.bucket_digest(consumed);
    put.bytes = bytes;
    return put;
  }

  // Looks up and claims; copies the endpoint record out of the arena.
  Result<std::vector<std::byte>> Restore(SessionId session, const PrefixHistory& history,
                                         ClaimId* claim_out = nullptr) {
    STRATA_ASSIGN_OR_RETURN(std::optional<LookupHit> hit,
                            catalog_.Lookup(session, history, 0, history.size()));
    if (!hit.has_value()) return Status::NotFound("no pooled prefix");
    std::vector<PrefixKey> chain;
    for (const ChainLink& link : hit->chain) chain.push_back(link.key);
    STRATA_ASSIGN_OR_RETURN(ClaimGrant grant, catalog_.Claim(session, chain, now_ms_));
    const ClaimedRecord& r = grant.records.back();
    std::vector<std::byte> out(r.bytes);
    uint64_t at = 0;
    for (SlotId slot : r.slots) {
      const uint64_t n = std::min<uint64_t>(kSlotBytes, r.bytes - at);
      std::memcpy(out.data() + at, arena_->Slot(slot).data(), n);
      at += n;
    }
    if (Xxh3(out) != r.checksum) return Status::Corruption("pooled record checksum");
    if (claim_out != nullptr) {
      *claim_out = grant.claim;
    } else {
      STRATA_RETURN_IF_ERROR(catalog_.ReleaseClaim(session, grant.claim));
    }
    return out;
  }

  static constexpr uint32_t kSlots = 8;
  std::unique_ptr<Arena> arena_;
  PoolCatalog catalog_{CatalogLimits{.slot_count = kSlots,
                                     .slot_bytes = kSlotBytes,
                                     .claims_in_flight_max = 2,
                                     .claim_setup_limit_ms = kManagerSetupLimitMsDefault}};
  uint64_t now_ms_ = 1'000;
};

TEST_F(PoolCatalogTest, OneInstancePutsAnotherClaimsByteExact) {
  const SessionId a = Open("GPU-a");
  const SessionId b = Open("GPU-b");
  const PrefixHistory history(Tokens(200, 7));
  ASSERT_TRUE(Put(a, history, 128, 3 * kSlotBytes + 17, 3).ok());
  auto restored = Restore(b, history);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(*restored, Pattern(3 * kSlotBytes + 17, 3));
}

TEST_F(PoolCatalogTest, AnotherScopeSharesNothing) {
  const SessionId a = Open("GPU-a", 1);
  const SessionId b = Open("GPU-b", 2);  // another layout fingerprint
  const PrefixHistory history(Tokens(200, 7));
  ASSERT_TRUE(Put(a, history, 128, kSlotBytes, 3).ok());
  EXPECT_EQ(Restore(b, history).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(catalog_.counts().scopes, 2u);
}

TEST_F(PoolCatalogTest, UncommittedPutIsNotClaimable) {
  const SessionId a = Open("GPU-a");
  const PrefixHistory history(Tokens(128, 1));
  const PutRequest put = RootPut(history, 128, kSlotBytes);
  auto grant = catalog_.BeginPut(a, put, now_ms_);
  ASSERT_TRUE(grant.ok());
  const std::vector<PrefixKey> chain{put.key};
  EXPECT_EQ(catalog_.Claim(a, chain, now_ms_).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(catalog_.BeginPut(a, put, now_ms_).status().code(), StatusCode::kBusy)
      << "a put in flight may still be aborted: not yet held";
  ASSERT_TRUE(catalog_.AbortPut(a, grant->put).ok());
  EXPECT_EQ(catalog_.slots().free_count(), kSlots);
}

TEST_F(PoolCatalogTest, APutUnderAParentThePoolLacksIsRefusedWithNothingIndexed) {
  const SessionId a = Open("GPU-a");
  const PrefixHistory history(Tokens(256, 4));
  PutRequest put = RootPut(history, 256, kSlotBytes);
  put.parent = history.key_at(128);  // never put
  auto grant = catalog_.BeginPut(a, put, now_ms_);
  ASSERT_EQ(grant.status().code(), StatusCode::kNotFound) << grant.status().ToString();
  EXPECT_NE(grant.status().message().find("is not pooled"), std::string::npos);
  EXPECT_EQ(catalog_.counts().records, 0u);
  EXPECT_EQ(catalog_.slots().free_count(), kSlots);

  // Once the parent is pooled, the child is taken under it.
  ASSERT_TRUE(Put(a, history, 128, kSlotBytes, 1).ok());
  grant = catalog_.BeginPut(a, put, now_ms_);
  ASSERT_TRUE(grant.ok()) << grant.status().ToString();
  ASSERT_TRUE(catalog_.AbortPut(a, grant->put).ok());
}

TEST_F(PoolCatalogTest, APutOfASizeNear2To64IsRefusedNotRoundedToNoSlots) {
  const SessionId a = Open("GPU-a");
  const PrefixHistory history(Tokens(128, 9));
  PutRequest put = RootPut(history, 128, UINT64_MAX);
  EXPECT_EQ(catalog_.BeginPut(a, put, now_ms_).status().code(), StatusCode::kInvalidArgument);
  put.bytes = uint64_t{kSlots} * kSlotBytes + 1;
  EXPECT_EQ(catalog_.BeginPut(a, put, now_ms_).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog_.counts().records, 0u);
  EXPECT_EQ(catalog_.slots().free_count(), kSlots);
}

TEST_F(PoolCatalogTest, EvictsLeastRecentlyUsedToMakeRoom) {
  const SessionId a = Open("GPU-a");
  const PrefixHistory first(Tokens(128, 100));
  const PrefixHistory second(Tokens(128, 200));
  const PrefixHistory third(Tokens(128, 300));
  ASSERT_TRUE(Put(a, first, 128, 4 * kSlotBytes, 1).ok());
  ++now_ms_;
  ASSERT_TRUE(Put(a, second, 128, 4 * kSlotBytes, 2).ok());
  ++now_ms_;
  ASSERT_TRUE(Restore(a, first).ok()) << "first becomes the most recently used";
  ASSERT_TRUE(Put(a, third, 128, 4 * kSlotBytes, 3).ok());
  EXPECT_TRUE(Restore(a, first).ok());
  EXPECT_EQ(Restore(a, second).status().code(), StatusCode::kNotFound) << "the LRU record went";
  EXPECT_EQ(catalog_.counts().evicted, 1u);
}

TEST_F(PoolCatalogTest, RefusesWhenClaimsPinEverything) {
  const SessionId a = Open("GPU-a");
  const PrefixHistory first(Tokens(128, 100));
  const PrefixHistory second(Tokens(128, 200));
  ASSERT_TRUE(Put(a, first, 128, 8 * kSlotBytes, 1).ok());
  ClaimId claim;
  ASSERT_TRUE(Restore(a, first, &claim).ok());
  const uint64_t epoch = catalog_.progress_epoch();
  EXPECT_EQ(Put(a, second, 128, kSlotBytes, 2).code(), StatusCode::kBusy);
  ASSERT_TRUE(catalog_.ReleaseClaim(a, claim).ok());
  EXPECT_GT(catalog_.progress_epoch(), epoch) << "a refused put may retry after progress";
  EXPECT_TRUE(Put(a, second, 128, kSlotBytes, 2).ok());
}

TEST_F(PoolCatalogTest, SlotNotReusedWhileAClaimCopyHoldsIt) {
  const SessionId a = Open("GPU-a");
  const SessionId b = Open("GPU-b");
  const PrefixHistory own(Tokens(128, 100));
  ASSERT_TRUE(Put(a, own, 128, 8 * kSlotBytes, 1, PutKind::kOwn).ok());
  ClaimId claim;
  ASSERT_TRUE(Restore(b, own, &claim).ok());
  ASSERT_TRUE(catalog_.EndSession(a).ok()) << "A's own record leaves the index";
  EXPECT_EQ(catalog_.counts().records, 0u);
  EXPECT_EQ(catalog_.slots().free_count(), 0u) << "B's copy still holds the slots";
  const SessionId c = Open("GPU-c");
  const PrefixHistory other(Tokens(128, 900));
  EXPECT_EQ(Put(c, other, 128, kSlotBytes, 9).code(), StatusCode::kBusy);
  ASSERT_TRUE(catalog_.ReleaseClaim(b, claim).ok());
  EXPECT_EQ(catalog_.slots().free_count(), kSlots);
  EXPECT_TRUE(Put(c, other, 128, kSlotBytes, 9).ok());
}

// Found by the pool simulation (seed 356): a claim whose record was removed
// and put again under the same key must not take the new put's pin when it
// ends, so the put's commit succeeds and the record is claimable.
TEST_F(PoolCatalogTest, AClaimEndingAfterItsKeyWasPutAgainLeavesTheNewPinAlone) {
  const SessionId a = Open("GPU-a");
  const SessionId b = Open("GPU-b");
  const PrefixHistory own(Tokens(128, 100));
  ASSERT_TRUE(Put(a, own, 128, kSlotBytes, 1, PutKind::kOwn).ok());
  ClaimId claim;
  ASSERT_TRUE(Restore(b, own, &claim).ok());
  ASSERT_TRUE(catalog_.EndSession(a).ok()) << "A's own record leaves the index";
  const SessionId c = Open("GPU-c");
  PutRequest put;
  put.key = own.key_at(128);
  put.bucket_digest = own.bucket_digest(128);
  put.bytes = kSlotBytes;
  auto grant = catalog_.BeginPut(c, put, now_ms_);
  ASSERT_TRUE(grant.ok()) << grant.status().ToString();
  const std::vector<std::byte> data = Pattern(kSlotBytes, 5);
  std::memcpy(arena_->Slot(grant->slots[0]).data(), data.data(), kSlotBytes);
  ASSERT_TRUE(catalog_.ReleaseClaim(b, claim).ok());
  ASSERT_TRUE(catalog_.CommitPut(c, grant->put, Xxh3(data), now_ms_).ok());
  auto restored = Restore(b, own);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(*restored, data);
}

TEST_F(PoolCatalogTest, CascadedRecordsOutliveTheirSession) {
  const SessionId a = Open("GPU-a");
  const PrefixHistory cascaded(Tokens(128, 100));
  const PrefixHistory own(Tokens(128, 200));
  ASSERT_TRUE(Put(a, cascaded, 128, kSlotBytes, 1, PutKind::kCascade).ok());
  ASSERT_TRUE(Put(a, own, 128, kSlotBytes, 2, PutKind::kOwn).ok());
  ASSERT_TRUE(catalog_.EndSession(a).ok());
  const SessionId b = Open("GPU-b");
  EXPECT_TRUE(Restore(b, cascaded).ok()) << "A exited and B still restores it";
  EXPECT_EQ(Restore(b, own).status().code(), StatusCode::kNotFound);
}

TEST_F(PoolCatalogTest, ReconnectReplacesTheSessionAndKeepsRecords) {
  const SessionId first = Open("GPU-a");
  const PrefixHistory own(Tokens(128, 200));
  ASSERT_TRUE(Put(first, own, 128, kSlotBytes, 2, PutKind::kOwn).ok());
  const SessionId second = Open("GPU-a");
  EXPECT_EQ(catalog_.counts().sessions, 1u);
  EXPECT_EQ(catalog_.EndSession(first).code(), StatusCode::kNotFound);
  EXPECT_TRUE(Restore(second, own).ok());
}

TEST_F(PoolCatalogTest, StalledClaimFailsButKeepsItsHolds) {
  const SessionId a = Open("GPU-a");
  const PrefixHistory h(Tokens(128, 5));
  ASSERT_TRUE(Put(a, h, 128, 2 * kSlotBytes, 1).ok());
  ClaimId claim;
  ASSERT_TRUE(Restore(a, h, &claim).ok());
  EXPECT_TRUE(catalog_.ExpireClaims(now_ms_ + kNoProgressTimeoutMs - 1).empty());
  ASSERT_TRUE(catalog_.ClaimProgress(a, claim, now_ms_ + 2'000).ok());
  EXPECT_TRUE(catalog_.ExpireClaims(now_ms_ + 4'000).empty()) << "progress moved the clock";
  const std::vector<FailedClaim> failed = catalog_.ExpireClaims(now_ms_ + 5'000);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].why, ClaimHealth::kStalled);
  EXPECT_EQ(catalog_.counts().claims_in_flight, 0u);
  EXPECT_EQ(catalog_.ClaimProgress(a, claim, now_ms_ + 5'001).code(), StatusCode::kAborted);
  EXPECT_EQ(catalog_.slots().free_count(), kSlots - 2) << "holds stay until release";
  ASSERT_TRUE(catalog_.ReleaseClaim(a, claim).ok());
}

TEST_F(PoolCatalogTest, ClaimAdmissionLimit) {
  const SessionId a = Open("GPU-a");
  const PrefixHistory h(Tokens(128, 5));
  ASSERT_TRUE(Put(a, h, 128, kSlotBytes, 1).ok());
  ClaimId c1;
  ClaimId c2;
  ASSERT_TRUE(Restore(a, h, &c1).ok());
  ASSERT_TRUE(Restore(a, h, &c2).ok());
  EXPECT_EQ(Restore(a, h).status().code(), StatusCode::kBusy) << "two claims in flight";
  ASSERT_TRUE(catalog_.ReleaseClaim(a, c1).ok());
  EXPECT_TRUE(Restore(a, h).ok());
  ASSERT_TRUE(catalog_.ReleaseClaim(a, c2).ok());
}

TEST_F(PoolCatalogTest, RejectsOversizeAndUnknownSessions) {
  const SessionId a = Open("GPU-a");
  const PrefixHistory h(Tokens(128, 5));
  EXPECT_EQ(Put(a, h, 128, kSlots * kSlotBytes + 1, 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Put(SessionId(999), h, 128, kSlotBytes, 1).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace strata::pool
