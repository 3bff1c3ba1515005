// CopyHashed: every byte copied and the digest equal to XXH3-64 over the
// whole, at sizes around the piece, through a pipeline reused from copy to
// copy; CheckSlotsFit: one rejection per way a
// grant can fail to hold its record.
#include "coordinator/pool/hashed_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/unit/coordinator/pool/pool_test_data.h"

namespace strata::pool {
namespace {

using testing::Pattern;

TEST(HashedCopyTest, CopiesEveryByteAndHashesTheWhole) {
  constexpr size_t kPiece = kHashedCopyPieceBytes;
  HashPipeline hash;
  for (size_t bytes : {size_t{0}, size_t{1}, kPiece - 1, kPiece, kPiece + 1, 3 * kPiece + 17}) {
    const std::vector<std::byte> src = Pattern(bytes, 3);
    std::vector<std::byte> dst(bytes, std::byte{0xee});
    hash.Reset();
    CopyHashed(dst, src, hash);
    EXPECT_EQ(dst, src) << bytes << " bytes";
    EXPECT_EQ(hash.Digest(), Xxh3(src)) << bytes << " bytes";
  }
}

TEST(HashedCopyTest, PiecesHashLikeTheirConcatenation) {
  // A record across slots: one stream over several copies.
  const std::vector<std::byte> src = Pattern(2 * kHashedCopyPieceBytes + 999, 8);
  std::vector<std::byte> dst(src.size());
  HashPipeline hash;
  const size_t cut = kHashedCopyPieceBytes + 5;
  CopyHashed(std::span(dst).first(cut), std::span(src).first(cut), hash);
  CopyHashed(std::span(dst).subspan(cut), std::span(src).subspan(cut), hash);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(hash.Digest(), Xxh3(src));
}

TEST(HashedCopyTest, SlotsThatFit) {
  const std::vector<SlotId> two{SlotId(3), SlotId(0)};
  EXPECT_TRUE(CheckSlotsFit(two, 101, 100, 4).ok());
  EXPECT_TRUE(CheckSlotsFit(two, 200, 100, 4).ok());
}

TEST(HashedCopyTest, RejectsTooFewSlots) {
  const std::vector<SlotId> two{SlotId(3), SlotId(0)};
  EXPECT_EQ(CheckSlotsFit(two, 201, 100, 4).code(), StatusCode::kCorruption);
}

TEST(HashedCopyTest, RejectsSurplusSlots) {
  const std::vector<SlotId> two{SlotId(3), SlotId(0)};
  EXPECT_EQ(CheckSlotsFit(two, 100, 100, 4).code(), StatusCode::kCorruption);
}

TEST(HashedCopyTest, RejectsASlotOutsideTheArena) {
  const std::vector<SlotId> two{SlotId(4), SlotId(0)};
  EXPECT_EQ(CheckSlotsFit(two, 150, 100, 4).code(), StatusCode::kCorruption);
}

TEST(HashedCopyTest, RejectsARecordLargerThanTheArenaWhateverItsSlots) {
  // A size near 2^64 would round up to no slots at all.
  EXPECT_EQ(CheckSlotsFit({}, UINT64_MAX, 100, 4).code(), StatusCode::kCorruption);
  const std::vector<SlotId> all{SlotId(0), SlotId(1), SlotId(2), SlotId(3)};
  EXPECT_TRUE(CheckSlotsFit(all, 400, 100, 4).ok());
  EXPECT_EQ(CheckSlotsFit(all, 401, 100, 4).code(), StatusCode::kCorruption);
}

TEST(HashedCopyTest, RejectsASlotNamedTwice) {
  const std::vector<SlotId> twice{SlotId(2), SlotId(1), SlotId(2)};
  const Status s = CheckSlotsFit(twice, 250, 100, 4);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("named twice"), std::string::npos) << s.ToString();
}

TEST(HashedCopyTest, RejectsZeroByteSlots) {
  EXPECT_EQ(CheckSlotsFit({}, 0, 0, 4).code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace strata::pool
