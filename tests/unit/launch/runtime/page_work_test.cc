#include "launch/runtime/page_work.h"

#include <gtest/gtest.h>

#include "launch/presets.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/transfer/host_planes.h"

namespace strata {
namespace {

PageWork SomeWork(PageWorkKind kind) {
  PageWork w{.kind = kind,
             .page_prefixes = {},
             .pages = {},
             .row = StateSlot(3),
             .endpoint = {.consumed = 128, .digest = {}}};
  for (uint32_t i = 0; i < 2; ++i) {
    Digest128 d{};
    d[0] = static_cast<uint8_t>(i + 1);
    w.page_prefixes.push_back(d);
    w.pages.push_back(PageId(10 + i));
  }
  w.endpoint.digest[5] = 9;
  return w;
}

TEST(PageWorkTest, ComputeThenVerifyChecksEveryPageAndTheRow) {
  HostPlanes planes(*PresetGeometry("tiny", 1, 64, 8));
  ASSERT_TRUE(ApplyPageWork(planes, 0, 2, SomeWork(PageWorkKind::kCompute)).ok());
  Result<PageWorkReport> checked = ApplyPageWork(planes, 0, 2, SomeWork(PageWorkKind::kVerify));
  ASSERT_TRUE(checked.ok()) << checked.status().ToString();
  const RankGeometry& g = planes.geometry().ranks[0];
  EXPECT_EQ(checked->checked_bytes, 2 * g.page_bytes() + g.row.unit_bytes);
}

TEST(PageWorkTest, BytesDependOnTheRankTheyAreComputedFor) {
  HostPlanes planes(*PresetGeometry("tiny", 1, 64, 8));
  ASSERT_TRUE(ApplyPageWork(planes, 0, 1, SomeWork(PageWorkKind::kCompute)).ok());
  Result<PageWorkReport> checked = ApplyPageWork(planes, 0, 2, SomeWork(PageWorkKind::kVerify));
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.status().code(), StatusCode::kCorruption);
  EXPECT_NE(checked.status().message().find("page id 10"), std::string::npos);
}

TEST(PageWorkTest, SameBytesAsTheSyntheticRuntimePublishes) {
  Digest128 d{};
  d[3] = 7;
  std::vector<uint8_t> a(512), b(512);
  SyntheticRuntime::PageBytes(d, 1, 2, a);
  SyntheticPageBytes(d, 1, 2, b);
  EXPECT_EQ(a, b);
}

TEST(PageWorkTest, EncodesAndDecodesEveryField) {
  const PageWork w = SomeWork(PageWorkKind::kVerify);
  Result<PageWork> back = DecodePageWork(EncodePageWork(w));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->kind, w.kind);
  EXPECT_EQ(back->page_prefixes, w.page_prefixes);
  EXPECT_EQ(back->pages, w.pages);
  EXPECT_EQ(back->row, w.row);
  EXPECT_EQ(back->endpoint, w.endpoint);
}

TEST(PageWorkTest, RejectsTruncatedWork) {
  std::vector<uint8_t> bytes = EncodePageWork(SomeWork(PageWorkKind::kCompute));
  bytes.pop_back();
  EXPECT_EQ(DecodePageWork(bytes).status().code(), StatusCode::kInvalidArgument);
}

TEST(PageWorkTest, RejectsTrailingBytes) {
  std::vector<uint8_t> bytes = EncodePageWork(SomeWork(PageWorkKind::kCompute));
  bytes.push_back(0);
  EXPECT_EQ(DecodePageWork(bytes).status().code(), StatusCode::kInvalidArgument);
}

TEST(PageWorkTest, RejectsAnUnknownKind) {
  std::vector<uint8_t> bytes = EncodePageWork(SomeWork(PageWorkKind::kCompute));
  bytes[0] = 7;
  EXPECT_EQ(DecodePageWork(bytes).status().code(), StatusCode::kInvalidArgument);
}

TEST(PageWorkTest, RejectsAPageCountAboveTheLimit) {
  std::vector<uint8_t> bytes = EncodePageWork(SomeWork(PageWorkKind::kCompute));
  bytes[4] = 0xff;  // the page count's top byte
  EXPECT_EQ(DecodePageWork(bytes).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata
