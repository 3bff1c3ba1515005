#include "store/record/record_layout.h"

#include <gtest/gtest.h>

#include "launch/presets.h"

namespace strata {
namespace {

TEST(RecordLayoutTest, EveryPlaneOffsetIsAlignedForEveryPreset) {
  for (const GeometryPreset& p : GeometryPresets()) {
    for (uint32_t ranks : {1u, 2u, 4u}) {
      RecordLayout l(*PresetGeometry(p.name, ranks, 16, 4));
      uint64_t expect_offset = 0;
      for (uint32_t r = 0; r < ranks; ++r) {
        for (uint32_t i = 0; i < l.plane_count(r); ++i) {
          EXPECT_EQ(l.plane_offset(r, i) % kRecordAlign, 0u) << p.name;
          EXPECT_EQ(l.plane_offset(r, i), expect_offset) << p.name;
          expect_offset += AlignUp(l.plane_bytes(r, i));
        }
        EXPECT_EQ(l.row_offset(r) % kRecordAlign, 0u);
      }
      EXPECT_EQ(l.page_record_bytes(), expect_offset);
      EXPECT_EQ(l.page_record_bytes(), ranks * l.replicated_page_record_bytes());
      EXPECT_TRUE(l.pages_can_replicate());
    }
  }
}

TEST(RecordLayoutTest, SmallPlanesArePaddedTo4KiB) {
  RankGeometry r{{"row", 100}, {{"a", 512}, {"b", 4097}, {"c", 4096}}, 1, 1};
  RecordLayout l(CacheGeometry{64, {r, r}});
  EXPECT_EQ(l.plane_offset(0, 1), 4096u);
  EXPECT_EQ(l.plane_offset(0, 2), 4096u + 8192);
  EXPECT_EQ(l.rank_page_share(0), 4096u * 4);
  EXPECT_EQ(l.plane_offset(1, 0), 4096u * 4);
  EXPECT_EQ(l.row_offset(1), 4096u);
  EXPECT_EQ(l.row_segment_bytes(), 8192u);
  EXPECT_EQ(l.stored_row_segment_bytes(/*replicated=*/true), 4096u);
}

TEST(RecordLayoutTest, DifferentRanksCannotReplicate) {
  RankGeometry a{{"row", 100}, {{"a", 512}}, 1, 1};
  RankGeometry b{{"row", 200}, {{"a", 1024}}, 1, 1};
  RecordLayout l(CacheGeometry{64, {a, b}});
  EXPECT_FALSE(l.pages_can_replicate());
  EXPECT_FALSE(l.rows_can_replicate());
}

}  // namespace
}  // namespace strata
