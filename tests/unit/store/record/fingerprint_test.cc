#include "store/record/fingerprint.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "launch/presets.h"

namespace strata {
namespace {

CacheGeometry TwoRanks() {
  RankGeometry r{{"row", 65536}, {{"k", 8192}, {"sel", 512}, {"v", 8192}}, 16, 128};
  return CacheGeometry{64, {r, r}};
}

TEST(FingerprintTest, EveryEncodedFieldChangesIt) {
  const LayoutFingerprint base = ComputeLayoutFingerprint(TwoRanks());
  struct Field {
    const char* name;
    std::function<void(CacheGeometry&)> edit;
  } fields[] = {
      {"rank count", [](CacheGeometry& g) { g.ranks.pop_back(); }},
      {"page tokens", [](CacheGeometry& g) { g.page_tokens = 128; }},
      {"plane count", [](CacheGeometry& g) { g.ranks[1].page_planes.pop_back(); }},
      {"plane name", [](CacheGeometry& g) { g.ranks[0].page_planes[1].name = "sem"; }},
      {"plane unit bytes", [](CacheGeometry& g) { g.ranks[1].page_planes[2].unit_bytes = 4096; }},
      {"row name", [](CacheGeometry& g) { g.ranks[0].row.name = "rows"; }},
      {"row unit bytes", [](CacheGeometry& g) { g.ranks[1].row.unit_bytes = 65537; }},
      {"plane order",
       [](CacheGeometry& g) { std::swap(g.ranks[0].page_planes[0], g.ranks[0].page_planes[2]); }},
  };
  std::set<LayoutFingerprint> seen{base};
  for (const Field& f : fields) {
    CacheGeometry g = TwoRanks();
    f.edit(g);
    LayoutFingerprint fp = ComputeLayoutFingerprint(g);
    EXPECT_NE(fp, base) << f.name;
    EXPECT_TRUE(seen.insert(fp).second) << f.name << " collides with another edit";
  }
}

TEST(FingerprintTest, UnchangedByThingsOutsideTheLayout) {
  // Row and page counts follow from load options (concurrency, GPU memory),
  // not from the layout, and must not move records to another namespace.
  const LayoutFingerprint base = ComputeLayoutFingerprint(TwoRanks());
  CacheGeometry more_rows = TwoRanks();
  more_rows.ranks[0].row_count = 64;
  more_rows.ranks[1].page_count = 99999;
  EXPECT_EQ(ComputeLayoutFingerprint(more_rows), base);
}

TEST(FingerprintTest, IndependentOfAllocationOrderAndPeers) {
  auto alloc = *PresetAllocations("qwen-like", 512, 8);
  auto fewer = *PresetAllocations("qwen-like", 2048, 32);  // another concurrency
  std::vector<SizedAllocation> reversed(alloc.rbegin(), alloc.rend());
  std::vector<SizedAllocation> no_peer = alloc;
  no_peer.pop_back();
  auto fp = [](const std::vector<SizedAllocation>& a) {
    return ComputeLayoutFingerprint(CacheGeometry{64, {*RankGeometryFromAllocations(a)}});
  };
  EXPECT_EQ(fp(alloc), fp(reversed));
  EXPECT_EQ(fp(alloc), fp(no_peer));
  EXPECT_EQ(fp(alloc), fp(fewer));
}

TEST(FingerprintTest, RankVariantCoversRankAndWorldSize) {
  const RankGeometry r = TwoRanks().ranks[0];
  const LayoutFingerprint base = ComputeRankLayoutFingerprint(r, 64, 0, 2);
  EXPECT_NE(ComputeRankLayoutFingerprint(r, 64, 1, 2), base);
  EXPECT_NE(ComputeRankLayoutFingerprint(r, 64, 0, 4), base);
  EXPECT_NE(ComputeRankLayoutFingerprint(r, 128, 0, 2), base);
  RankGeometry other = r;
  other.page_planes[0].unit_bytes = 4096;
  EXPECT_NE(ComputeRankLayoutFingerprint(other, 64, 0, 2), base);
  // Never equal to a single-process fingerprint of the same one rank.
  EXPECT_NE(ComputeLayoutFingerprint(CacheGeometry{64, {r}}),
            ComputeRankLayoutFingerprint(r, 64, 0, 1));
}

TEST(FingerprintTest, EncodingIsLittleEndianAndLengthPrefixed) {
  CacheGeometry g{64, {RankGeometry{{"r", 2}, {{"p", 1}}, 1, 1}}};
  std::vector<uint8_t> expect = {'W', 1, 0, 0, 0,   64, 0, 0, 0,  // tag, ranks, page tokens
                                 1,   0, 0, 0,                    // plane count
                                 1,   0, 0, 0, 'p', 1,  0, 0, 0, 0, 0, 0, 0,   // "p", 1 byte
                                 1,   0, 0, 0, 'r', 2,  0, 0, 0, 0, 0, 0, 0};  // row "r", 2 bytes
  EXPECT_EQ(EncodeLayout(g), expect);
}

TEST(IdentityTest, DiffersPerStateModeAndModel) {
  std::set<NamespaceIdentity> ids;
  for (const char* model : {"qwen3-8b", "qwen3-8b-instruct", ""}) {
    for (StateMode m :
         {StateMode::kOrdinary, StateMode::kLearnedSpeculation, StateMode::kCopySpeculation}) {
      EXPECT_TRUE(ids.insert(ComputeNamespaceIdentity(model, m)).second)
          << model << " " << StateModeName(m);
    }
  }
  EXPECT_EQ(ComputeNamespaceIdentity("m", StateMode::kOrdinary),
            ComputeNamespaceIdentity("m", StateMode::kOrdinary));
}

TEST(IdentityTest, DirectoryName) {
  NamespaceIdentity id{};
  id[0] = 0xab;
  LayoutFingerprint fp{};
  fp[15] = 0x01;
  EXPECT_EQ(NamespaceDirName(id, fp), "ab00000000000000-00000000000000000000000000000001");
}

}  // namespace
}  // namespace strata
