#include "coordinator/pool/source_choice.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata::pool {
namespace {

PrefixKey Key(uint64_t consumed, uint8_t tag = 0) {
  PrefixKey k;
  k.consumed = consumed;
  k.digest[0] = tag;
  return k;
}

SourceCandidate Candidate(SourceTier tier, uint64_t consumed, uint8_t tag = 0) {
  SourceCandidate c;
  c.tier = tier;
  ChainLink link;
  link.key = Key(consumed, tag);
  c.hit.chain.push_back(link);
  return c;
}

TEST(SourceChoiceTest, LongestPrefixThenClosestTier) {
  using T = SourceTier;
  struct Case {
    const char* name;
    std::vector<SourceCandidate> candidates;
    std::optional<size_t> want;
  };
  const Case cases[] = {
      {"none", {}, std::nullopt},
      {"one", {Candidate(T::kPool, 128)}, 0},
      {"longer pool beats shorter dram",
       {Candidate(T::kHostDram, 64), Candidate(T::kPool, 128)},
       1},
      {"tie goes to dram", {Candidate(T::kPool, 128), Candidate(T::kHostDram, 128)}, 1},
      {"tie goes to nvme over pool", {Candidate(T::kPool, 128), Candidate(T::kHostNvme, 128)}, 1},
      {"tie dram over nvme",
       {Candidate(T::kHostNvme, 64), Candidate(T::kHostDram, 64), Candidate(T::kPool, 64)},
       1},
      {"longest nvme", {Candidate(T::kHostDram, 64), Candidate(T::kHostNvme, 65)}, 1},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ChooseSource(c.candidates), c.want) << c.name;
  }
}

TEST(SourceChoiceTest, EmptyHitsNeverChosen) {
  SourceCandidate empty;
  empty.tier = SourceTier::kHostDram;
  std::vector<SourceCandidate> candidates{empty, Candidate(SourceTier::kPool, 64)};
  EXPECT_EQ(ChooseSource(candidates), 1u);
}

TEST(SourceChoiceTest, FallbackNeedsTheSameEndpointLocally) {
  using T = SourceTier;
  const PrefixKey endpoint = Key(128, 7);
  struct Case {
    const char* name;
    std::vector<SourceCandidate> candidates;
    std::optional<size_t> want;
  };
  const Case cases[] = {
      {"only the pool: recompute", {Candidate(T::kPool, 128, 7)}, std::nullopt},
      {"shorter local: recompute",
       {Candidate(T::kPool, 128, 7), Candidate(T::kHostDram, 64)},
       std::nullopt},
      {"same length, other digest", {Candidate(T::kHostNvme, 128, 8)}, std::nullopt},
      {"nvme copy", {Candidate(T::kPool, 128, 7), Candidate(T::kHostNvme, 128, 7)}, 1},
      {"dram over nvme", {Candidate(T::kHostNvme, 128, 7), Candidate(T::kHostDram, 128, 7)}, 1},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FallbackAfterPoolFailure(c.candidates, endpoint), c.want) << c.name;
  }
}

}  // namespace
}  // namespace strata::pool
