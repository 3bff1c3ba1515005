// PoolCatalog's holdings and the exports that serve them (pool_catalog.h):
// lookups find another session's deepest holding the pool lacks, an export
// puts its record on the holder's session under the claim's chain, and
// holdings leave with withdrawals, resets, refusals and session ends.
#include <gtest/gtest.h>

#include "coordinator/pool/pool_catalog.h"
#include "coordinator/pool/pool_record_image.h"
#include "tests/unit/coordinator/pool/pool_test_data.h"

namespace strata::pool {
namespace {

constexpr uint32_t kPageTokens = 64;
constexpr ExportRecordSizes kSizes{.page_record_bytes = 8192, .row_segment_bytes = 4096};

class PoolCatalogHoldingsTest : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_TRUE(catalog_.CheckInvariants().ok()); }
  SessionId Open(const char* uuid, uint8_t layout_tag = 1) {
    const std::vector<std::string> gpus{uuid};
    auto s = catalog_.OpenSession(ComputeInstanceId("test-pool", gpus),
                                  testing::CatalogScope(layout_tag), kPageTokens, 0);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return *s;
  }
  Holding Held(uint64_t consumed, uint64_t generation = 1) const {
    return Holding{.key = history_.key_at(consumed),
                   .generation = generation,
                   .bucket_digest = history_.bucket_digest(consumed)};
  }
  Status Announce(SessionId s, std::vector<Holding> held, std::vector<Holding> withdrawn = {},
                  bool reset = false) {
    return catalog_.Announce(s, reset, held, withdrawn, kSizes);
  }
  std::optional<Holding> Lookup(SessionId s, uint64_t above = 0) const {
    return catalog_.LookupHeld(s, history_, above, history_.size());
  }

  PoolCatalog catalog_{CatalogLimits{.slot_count = 64, .slot_bytes = 65536}};
  PrefixHistory history_{testing::Tokens(1000, 3)};
};

TEST_F(PoolCatalogHoldingsTest, ALookupFindsAnotherSessionsDeepestHolding) {
  const SessionId a = Open("gpu-a");
  const SessionId b = Open("gpu-b");
  ASSERT_TRUE(Announce(a, {Held(320), Held(640), Held(700)}).ok());
  std::optional<Holding> held = Lookup(b);
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ(held->key, history_.key_at(700));
  EXPECT_FALSE(Lookup(a).has_value()) << "its own holdings are not offered to it";
  EXPECT_FALSE(Lookup(b, 700).has_value()) << "nothing above what it has";
  EXPECT_EQ(catalog_.LookupHeld(b, history_, 0, 650)->key, history_.key_at(640));
  // Another history (other tokens) matches nothing.
  const PrefixHistory other(testing::Tokens(1000, 4));
  EXPECT_FALSE(catalog_.LookupHeld(b, other, 0, other.size()).has_value());
  // Another scope sees nothing.
  EXPECT_FALSE(Lookup(Open("gpu-c", 2)).has_value());
  EXPECT_EQ(catalog_.counts().holdings, 3u);
}

TEST_F(PoolCatalogHoldingsTest, WithdrawalsResetsAndSessionEndsForgetHoldings) {
  const SessionId a = Open("gpu-a");
  const SessionId b = Open("gpu-b");
  ASSERT_TRUE(Announce(a, {Held(320, 1), Held(640, 1)}).ok());
  // A withdrawal of an older generation leaves a newer holding be.
  ASSERT_TRUE(Announce(a, {Held(640, 2)}).ok());
  ASSERT_TRUE(Announce(a, {}, {Held(640, 1)}).ok());
  EXPECT_EQ(Lookup(b)->key, history_.key_at(640));
  ASSERT_TRUE(Announce(a, {}, {Held(640, 2)}).ok());
  EXPECT_EQ(Lookup(b)->key, history_.key_at(320));
  ASSERT_TRUE(Announce(a, {Held(700)}, {}, /*reset=*/true).ok());
  EXPECT_EQ(catalog_.counts().holdings, 1u);
  EXPECT_EQ(Lookup(b)->key, history_.key_at(700));
  catalog_.DropHolding(a, history_.key_at(700));
  EXPECT_FALSE(Lookup(b).has_value());
  ASSERT_TRUE(Announce(a, {Held(700)}).ok());
  ASSERT_TRUE(catalog_.EndSession(a).ok());
  EXPECT_FALSE(Lookup(b).has_value());
  EXPECT_EQ(catalog_.counts().holdings, 0u);
}

TEST_F(PoolCatalogHoldingsTest, AnExportPutsTheRecordUnderTheClaimedChainOnTheHoldersSession) {
  const SessionId a = Open("gpu-a");
  const SessionId b = Open("gpu-b");
  ASSERT_TRUE(Announce(a, {Held(700, 9)}).ok());
  // A root export: the whole chain, 10 pages and the row.
  const std::vector<PrefixKey> root{history_.key_at(700)};
  Result<std::optional<ExportStart>> start = catalog_.BeginExport(b, root, 0);
  ASSERT_TRUE(start.ok()) << start.status().ToString();
  ASSERT_TRUE(start->has_value());
  const ExportStart& s = **start;
  EXPECT_EQ(s.holder, a);
  EXPECT_EQ(s.ask.key, history_.key_at(700));
  EXPECT_EQ(s.ask.generation, 9u);
  EXPECT_FALSE(s.ask.parent.has_value());
  EXPECT_EQ(s.ask.start_page, 0u);
  EXPECT_EQ(s.ask.bytes,
            kRecordImageHeaderBytes + 10 * kSizes.page_record_bytes + kSizes.row_segment_bytes);
  // A second claim meanwhile sees the record arriving, not a holding.
  EXPECT_EQ(catalog_.BeginExport(b, root, 0).status().code(), StatusCode::kOk);
  EXPECT_FALSE(Lookup(b).has_value()) << "a record being put is not offered as a holding";
  ASSERT_TRUE(catalog_.CommitPut(a, s.ask.put, 0x1234, 1).ok());
  Result<ClaimGrant> grant = catalog_.Claim(b, root, 2);
  ASSERT_TRUE(grant.ok()) << grant.status().ToString();
  EXPECT_EQ(grant->records[0].bytes, s.ask.bytes);
  EXPECT_EQ(grant->records[0].checksum, 0x1234u);
  ASSERT_TRUE(catalog_.ReleaseClaim(b, grant->claim).ok());
  // Pooled now: a claim of it is an ordinary one.
  EXPECT_FALSE(catalog_.BeginExport(b, root, 3)->has_value());
}

TEST_F(PoolCatalogHoldingsTest, AnExportUnderAPooledParentStartsAtTheParentsPages) {
  const SessionId a = Open("gpu-a");
  const SessionId b = Open("gpu-b");
  // The pool holds the prefix of 320 tokens (5 pages); A holds 700.
  PutRequest put{.key = history_.key_at(320),
                 .parent = std::nullopt,
                 .bucket_digest = history_.bucket_digest(320),
                 .bytes = 1000,
                 .kind = PutKind::kCascade};
  Result<PutGrant> parent = catalog_.BeginPut(b, put, 0);
  ASSERT_TRUE(parent.ok());
  ASSERT_TRUE(catalog_.CommitPut(b, parent->put, 1, 0).ok());
  ASSERT_TRUE(Announce(a, {Held(700)}).ok());
  const std::vector<PrefixKey> chain{history_.key_at(320), history_.key_at(700)};
  Result<std::optional<ExportStart>> start = catalog_.BeginExport(b, chain, 1);
  ASSERT_TRUE(start.ok() && start->has_value()) << start.status().ToString();
  EXPECT_EQ((*start)->ask.parent, history_.key_at(320));
  EXPECT_EQ((*start)->ask.start_page, 5u);
  EXPECT_EQ((*start)->ask.bytes,
            kRecordImageHeaderBytes + 5 * kSizes.page_record_bytes + kSizes.row_segment_bytes);
  // The holder's session ending takes the pending record with it.
  ASSERT_TRUE(catalog_.EndSession(a).ok());
  EXPECT_EQ(catalog_.counts().records, 1u);
}

TEST_F(PoolCatalogHoldingsTest, AnExportNeedsTheChainBelowItCommittedAndTheHoldersSizes) {
  const SessionId a = Open("gpu-a");
  const SessionId b = Open("gpu-b");
  ASSERT_TRUE(catalog_.Announce(a, false, std::vector<Holding>{Held(700)}, {}, {}).ok());
  const std::vector<PrefixKey> root{history_.key_at(700)};
  EXPECT_EQ(catalog_.BeginExport(b, root, 0).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(Announce(a, {Held(700)}).ok());
  const std::vector<PrefixKey> orphan{history_.key_at(320), history_.key_at(700)};
  EXPECT_EQ(catalog_.BeginExport(b, orphan, 0).status().code(), StatusCode::kNotFound);
  // Nobody holds it: not an export.
  const std::vector<PrefixKey> unheld{history_.key_at(500)};
  EXPECT_FALSE(catalog_.BeginExport(b, unheld, 0)->has_value());
  EXPECT_FALSE(catalog_.BeginExport(a, root, 0)->has_value()) << "not from itself";
}

}  // namespace
}  // namespace strata::pool
