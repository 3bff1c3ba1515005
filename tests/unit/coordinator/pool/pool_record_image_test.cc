// The pooled record image: a round trip keeps every field and byte, and each
// way an image can be wrong has its own rejection.
#include "coordinator/pool/pool_record_image.h"

#include <gtest/gtest.h>

#include <cstring>

namespace strata::pool {
namespace {

struct Sample {
  std::vector<std::byte> page_a = std::vector<std::byte>(4096, std::byte{0x11});
  std::vector<std::byte> page_b = std::vector<std::byte>(4096, std::byte{0x22});
  std::vector<std::byte> row = std::vector<std::byte>(8192, std::byte{0x33});
  RecordView view;
  Sample() {
    view.key = {.consumed = 256, .digest = {7}};
    view.parent = PrefixKey{.consumed = 128, .digest = {5}};
    view.bucket = {9};
    view.tail_pages = 2;
    view.replicated_row = true;
    view.pages = {page_a, page_b};
    // The row in two pieces, as slab slots hold it.
    view.row = {std::span<const std::byte>(row).first(4096),
                std::span<const std::byte>(row).subspan(4096)};
  }
};

TEST(PoolRecordImageTest, RoundTripKeepsFieldsAndBytes) {
  Sample s;
  std::vector<std::byte> image = EncodeRecordImage(s.view);
  EXPECT_EQ(image.size(), kRecordImageHeaderBytes + 2 * 4096 + 8192);
  Result<RecordView> v = DecodeRecordImage(image);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->key, s.view.key);
  EXPECT_EQ(v->parent, s.view.parent);
  EXPECT_EQ(v->bucket, s.view.bucket);
  EXPECT_EQ(v->tail_pages, 2u);
  EXPECT_FALSE(v->replicated_pages);
  EXPECT_TRUE(v->replicated_row);
  ASSERT_EQ(v->pages.size(), 2u);
  EXPECT_EQ(std::memcmp(v->pages[1].data(), s.page_b.data(), 4096), 0);
  ASSERT_EQ(v->row.size(), 1u);
  EXPECT_EQ(std::memcmp(v->row[0].data(), s.row.data(), 8192), 0);
}

TEST(PoolRecordImageTest, RootWithoutRowRoundTrips) {
  Sample s;
  s.view.parent.reset();
  s.view.row.clear();
  Result<RecordView> v = DecodeRecordImage(EncodeRecordImage(s.view));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_FALSE(v->parent.has_value());
  EXPECT_FALSE(v->has_row());
}

// Decodes `image` after `damage` and expects kCorruption naming `field`.
void ExpectRejected(void (*damage)(std::vector<std::byte>&), const char* field) {
  Sample s;
  std::vector<std::byte> image = EncodeRecordImage(s.view);
  damage(image);
  Result<RecordView> v = DecodeRecordImage(image);
  ASSERT_FALSE(v.ok()) << field;
  EXPECT_EQ(v.status().code(), StatusCode::kCorruption);
  EXPECT_NE(v.status().message().find(field), std::string::npos) << v.status().ToString();
}

TEST(PoolRecordImageTest, RejectsShortImage) {
  ExpectRejected([](std::vector<std::byte>& i) { i.resize(100); }, "shorter than its header");
}
TEST(PoolRecordImageTest, RejectsBadMagic) {
  ExpectRejected([](std::vector<std::byte>& i) { i[0] = std::byte{'X'}; }, "magic");
}
TEST(PoolRecordImageTest, RejectsUnknownFlags) {
  ExpectRejected([](std::vector<std::byte>& i) { i[13] = std::byte{0x80}; }, "flags");
}
TEST(PoolRecordImageTest, RejectsTooManyPages) {
  ExpectRejected([](std::vector<std::byte>& i) { i[11] = std::byte{0x10}; }, "tail pages");
}
TEST(PoolRecordImageTest, RejectsHugePieces) {
  ExpectRejected([](std::vector<std::byte>& i) { i[23] = std::byte{0x10}; }, "piece sizes");
}
TEST(PoolRecordImageTest, RejectsSizesWhoseProductWrapsToTheImagesLength) {
  // (2^24 - 1) pages of 2^40 bytes and a 2^40-byte row: 2^64 + 128 wraps to
  // 128, the length of a bare header.
  ExpectRejected(
      [](std::vector<std::byte>& i) {
        i.resize(kRecordImageHeaderBytes);
        const uint8_t pages[4] = {0xff, 0xff, 0xff, 0x00};
        std::memcpy(i.data() + 8, pages, 4);
        std::memset(i.data() + 16, 0, 16);
        i[16 + 5] = std::byte{0x01};  // page bytes 2^40
        i[24 + 5] = std::byte{0x01};  // row bytes 2^40
      },
      "overflow");
}
TEST(PoolRecordImageTest, RejectsReservedBytes) {
  ExpectRejected([](std::vector<std::byte>& i) { i[100] = std::byte{1}; }, "reserved");
}
TEST(PoolRecordImageTest, RejectsWrongLength) {
  ExpectRejected([](std::vector<std::byte>& i) { i.pop_back(); }, "its header says");
}
TEST(PoolRecordImageTest, RejectsEmptyKey) {
  ExpectRejected([](std::vector<std::byte>& i) { std::memset(i.data() + 32, 0, 8); },
                 "key has no tokens");
}
TEST(PoolRecordImageTest, RejectsParentNotShorter) {
  ExpectRejected([](std::vector<std::byte>& i) { i[57] = std::byte{0x10}; }, "parent");
}

}  // namespace
}  // namespace strata::pool
