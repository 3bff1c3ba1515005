#include "store/record/checksum.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

namespace strata {
namespace {

std::span<const std::byte> Bytes(std::string_view s) { return std::as_bytes(std::span(s)); }

TEST(ChecksumTest, MatchesTheXxh3ReferenceValues) {
  // XXH3_64bits with seed 0, from the xxHash reference implementation.
  EXPECT_EQ(Xxh3({}), 0x2D06800538D394C2ULL);
  EXPECT_NE(Xxh3(Bytes("a")), Xxh3(Bytes("b")));
}

TEST(ChecksumTest, StreamOverPiecesEqualsOneShot) {
  std::vector<std::byte> data(1 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 131 + (i >> 9));
  Xxh3Stream s;
  size_t at = 0;
  for (size_t piece : {1u, 4095u, 4096u, 65536u, 100000u}) {
    s.Update(std::span(data).subspan(at, piece));
    at += piece;
  }
  s.Update(std::span(data).subspan(at));
  EXPECT_EQ(s.Digest(), Xxh3(data));
  s.Reset();
  s.Update(data);
  EXPECT_EQ(s.Digest(), Xxh3(data));
}

TEST(ChecksumTest, TheColdPathEqualsTheOneShotForEverySize) {
  std::vector<std::byte> data((1 << 20) + 4097);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 131 + (i >> 9));
  // Below, at and across the prefetch step and the one-shot threshold, and
  // unaligned starts.
  for (size_t size : {0u, 1u, 4095u, 4096u, 16384u, 16385u, 65536u, 589824u, 1u << 20}) {
    for (size_t start : {0u, 1u, 4097u}) {
      const auto bytes = std::span<const std::byte>(data).subspan(start, size);
      EXPECT_EQ(Xxh3Cold(bytes), Xxh3(bytes)) << size << " bytes from " << start;
    }
  }
  Xxh3Stream s;
  s.Update(std::span(data).first(100));
  s.UpdateCold(std::span(data).subspan(100, 300000));
  s.Update(std::span(data).subspan(300100));
  EXPECT_EQ(s.Digest(), Xxh3(data));
}

TEST(ChecksumTest, OneFlippedBitChangesTheSum) {
  std::vector<std::byte> data(16384, std::byte{7});
  const uint64_t before = Xxh3(data);
  data[9000] ^= std::byte{0x20};
  EXPECT_NE(Xxh3(data), before);
}

}  // namespace
}  // namespace strata
