#include "coordinator/pool/arena.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

namespace strata::pool {
namespace {

TEST(ArenaTest, SecondMappingSeesTheSameBytes) {
  auto arena = Arena::Create("arena-test", 8192, 4, HugePages::kNever);
  ASSERT_TRUE(arena.ok()) << arena.status().ToString();
  EXPECT_EQ((*arena)->bytes(), 4u * 8192);
  EXPECT_EQ((*arena)->page_kind(), PageKind::kOrdinary);
  std::memset((*arena)->Slot(SlotId(2)).data(), 0x5a, 8192);

  wire::UniqueFd dup(::dup((*arena)->fd()));
  auto mapped = Arena::Map(std::move(dup), 8192, 4);
  ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
  const std::span<std::byte> slot = (*mapped)->Slot(SlotId(2));
  EXPECT_EQ(slot[0], std::byte{0x5a});
  EXPECT_EQ(slot[8191], std::byte{0x5a});
  EXPECT_EQ((*mapped)->Slot(SlotId(1))[0], std::byte{0}) << "other slots untouched";
}

TEST(ArenaTest, HugePagesFallBackToOrdinary) {
  // Either page kind is right; the arena must exist and be writable.
  auto arena = Arena::Create("arena-huge", kHugePageBytes, 1, HugePages::kIfAvailable);
  ASSERT_TRUE(arena.ok()) << arena.status().ToString();
  (*arena)->Slot(SlotId(0))[kHugePageBytes - 1] = std::byte{1};
  EXPECT_EQ((*arena)->Slot(SlotId(0))[kHugePageBytes - 1], std::byte{1});
}

TEST(ArenaTest, RejectsBadGeometry) {
  EXPECT_EQ(Arena::Create("a", 100, 1, HugePages::kNever).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Arena::Create("a", 4096, 0, HugePages::kNever).status().code(),
            StatusCode::kInvalidArgument);
  auto small = Arena::Create("small", 4096, 1, HugePages::kNever);
  ASSERT_TRUE(small.ok());
  wire::UniqueFd dup(::dup((*small)->fd()));
  EXPECT_EQ(Arena::Map(std::move(dup), 4096, 2).status().code(), StatusCode::kInvalidArgument)
      << "an fd smaller than its announced geometry";
}

}  // namespace
}  // namespace strata::pool
