#include "coordinator/agreement.h"

#include <gtest/gtest.h>

#include <string>

namespace strata {
namespace {

PrefixKey K(uint64_t consumed) {
  PrefixKey k;
  k.consumed = consumed;
  k.digest[0] = static_cast<uint8_t>(consumed);
  return k;
}

Digest128 D(uint8_t header) {
  Digest128 d{};
  d[0] = header;
  return d;
}

// A summary entry: key, parent (0: none), header digest, row present.
wire::ScanRecord R(uint64_t key, uint64_t parent, uint8_t header, bool row = true) {
  wire::ScanRecord r;
  r.key = K(key);
  if (parent != 0) r.parent = K(parent);
  r.header_digest = D(header);
  r.row_present = row;
  r.size_bytes = 8192;
  return r;
}

std::vector<PrefixKey> Keys(std::initializer_list<uint64_t> consumed) {
  std::vector<PrefixKey> out;
  for (uint64_t c : consumed) out.push_back(K(c));
  return out;
}

struct Case {
  std::string name;
  std::vector<RankScan> scans;
  std::vector<PrefixKey> kept;
  std::vector<RankChanges> changes;  // per rank
  AgreementCounts counts;
};

TEST(AgreementTest, EveryRule) {
  const std::vector<Case> cases = {
      {"identical ranks keep everything",
       {{R(64, 0, 1), R(128, 64, 2)}, {R(64, 0, 1), R(128, 64, 2)}, {R(128, 64, 2), R(64, 0, 1)}},
       Keys({64, 128}),
       {{}, {}, {}},
       {.kept = 2}},
      {"a record missing on one rank is deleted from the others",
       {{R(64, 0, 1), R(192, 0, 3)}, {R(64, 0, 1), R(192, 0, 3)}, {R(64, 0, 1)}},
       Keys({64}),
       {{Keys({192}), {}}, {Keys({192}), {}}, {}},
       {.kept = 1, .missing = 1}},
      {"a record only rank zero holds is deleted",
       {{R(64, 0, 1)}, {}},
       {},
       {{Keys({64}), {}}, {}},
       {.missing = 1}},
      {"headers that differ drop the record everywhere",
       {{R(64, 0, 1), R(192, 0, 3)}, {R(64, 0, 1), R(192, 0, 4)}},
       Keys({64}),
       {{Keys({192}), {}}, {Keys({192}), {}}},
       {.kept = 1, .mismatched = 1}},
      {"a row missing on one rank is truncated on the ranks that hold it",
       {{R(64, 0, 1, true)}, {R(64, 0, 1, false)}, {R(64, 0, 1, true)}},
       Keys({64}),
       {{{}, Keys({64})}, {}, {{}, Keys({64})}},
       {.kept = 1, .rows_dropped = 1}},
      {"a record without its row on every rank needs no truncation",
       {{R(64, 0, 1, false)}, {R(64, 0, 1, false)}},
       Keys({64}),
       {{}, {}},
       {.kept = 1}},
      {"children of a dropped record are dropped, transitively",
       {{R(64, 0, 1), R(128, 64, 2), R(192, 128, 3), R(320, 0, 5)},
        {R(64, 0, 9), R(128, 64, 2), R(192, 128, 3), R(320, 0, 5)}},
       Keys({320}),
       {{Keys({64, 128, 192}), {}}, {Keys({64, 128, 192}), {}}},
       {.kept = 1, .mismatched = 1, .orphaned = 2}},
      {"a child whose parent is missing on one rank goes with it",
       {{R(64, 0, 1), R(128, 64, 2)}, {R(128, 64, 2)}},
       {},
       {{Keys({64, 128}), {}}, {Keys({128}), {}}},
       {.missing = 1, .orphaned = 1}},
      {"a child of a kept parent with a dropped row is kept",
       {{R(64, 0, 1, true), R(128, 64, 2)}, {R(64, 0, 1, false), R(128, 64, 2)}},
       Keys({64, 128}),
       {{{}, Keys({64})}, {}},
       {.kept = 2, .rows_dropped = 1}},
      {"a parent nobody summarized orphans its child",
       {{R(128, 64, 2)}, {R(128, 64, 2)}},
       {},
       {{Keys({128}), {}}, {Keys({128}), {}}},
       {.orphaned = 1}},
      {"one rank keeps what its scan kept", {{R(64, 0, 1, false)}}, Keys({64}), {{}}, {.kept = 1}},
      {"no records", {{}, {}, {}, {}}, {}, {{}, {}, {}, {}}, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<AgreementPlan> plan = Agree(c.scans);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->kept, c.kept);
    ASSERT_EQ(plan->ranks.size(), c.scans.size());
    for (size_t r = 0; r < c.scans.size(); ++r) {
      EXPECT_EQ(plan->ranks[r].delete_keys, c.changes[r].delete_keys) << "rank " << r;
      EXPECT_EQ(plan->ranks[r].truncate_keys, c.changes[r].truncate_keys) << "rank " << r;
    }
    EXPECT_EQ(plan->counts, c.counts);
  }
}

TEST(AgreementTest, ARankThatSummarizesAKeyTwiceIsRefused) {
  Result<AgreementPlan> plan = Agree({{R(64, 0, 1)}, {R(64, 0, 1), R(64, 0, 1)}});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("rank 1 summarized record"), std::string::npos);
}

TEST(AgreementTest, VerdictsFollowTheRanksSummaryOrder) {
  const RankScan scan = {R(192, 0, 3), R(64, 0, 1), R(128, 64, 2)};
  const RankChanges changes{Keys({192}), Keys({64})};
  const std::vector<wire::AgreementEntry> verdicts = VerdictsFor(scan, changes);
  ASSERT_EQ(verdicts.size(), 3u);
  EXPECT_EQ(verdicts[0].key, K(192));
  EXPECT_EQ(verdicts[0].verdict, wire::Verdict::kDelete);
  EXPECT_EQ(verdicts[1].key, K(64));
  EXPECT_EQ(verdicts[1].verdict, wire::Verdict::kTruncate);
  EXPECT_EQ(verdicts[2].key, K(128));
  EXPECT_EQ(verdicts[2].verdict, wire::Verdict::kKeep);
}

}  // namespace
}  // namespace strata
