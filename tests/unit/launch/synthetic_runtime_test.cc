#include "launch/runtime/synthetic_runtime.h"

#include <gtest/gtest.h>

#include "launch/presets.h"
#include "store/transfer/host_planes.h"

namespace strata {
namespace {

TEST(SyntheticRuntimeTest, ReusesResidentGpuPrefixWithoutAStore) {
  HostPlanes planes(*PresetGeometry("tiny", 2, /*pages=*/64, /*rows=*/8));
  SyntheticRuntime rt(planes, nullptr);
  uint32_t c = rt.NewConversation();
  TurnReport t1 = *rt.Turn(c, 300);
  EXPECT_EQ(t1.gpu_reused_tokens, 0u);
  EXPECT_EQ(t1.computed_tokens, 300u);
  TurnReport t2 = *rt.Turn(c, 100);
  EXPECT_EQ(t2.gpu_reused_tokens, 300u);
  EXPECT_EQ(t2.computed_tokens, 100u);
  EXPECT_EQ(rt.stats().gpu_hits, 1u);
}

TEST(SyntheticRuntimeTest, LruEvictionMakesRoomAndForgetsOldPrefixes) {
  // 64 pages of 64 tokens: room for about three 1,200-token conversations.
  HostPlanes planes(*PresetGeometry("tiny", 1, 64, 8));
  SyntheticRuntime rt(planes, nullptr);
  std::vector<uint32_t> convs;
  for (int i = 0; i < 6; ++i) {
    convs.push_back(rt.NewConversation());
    ASSERT_TRUE(rt.Turn(convs.back(), 1200).ok());
  }
  EXPECT_GT(rt.stats().gpu_evictions, 0u);
  TurnReport again = *rt.Turn(convs[0], 10);  // its prefix was evicted
  EXPECT_EQ(again.gpu_reused_tokens, 0u);
  TurnReport recent = *rt.Turn(convs[5], 10);
  EXPECT_EQ(recent.gpu_reused_tokens, 1200u);
}

TEST(SyntheticRuntimeTest, BranchSharesThePrefix) {
  HostPlanes planes(*PresetGeometry("tiny", 1, 64, 8));
  SyntheticRuntime rt(planes, nullptr);
  uint32_t a = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(a, 200).ok());
  ASSERT_TRUE(rt.Turn(a, 100).ok());
  uint32_t b = rt.Branch(a, 200);
  EXPECT_EQ(rt.conversation_tokens(b), 200u);
  TurnReport t = *rt.Turn(b, 50);
  EXPECT_EQ(t.gpu_reused_tokens, 200u);
}

TEST(SyntheticRuntimeTest, PublishedBytesDependOnPrefixPlaneAndRank) {
  Digest128 d{};
  std::vector<uint8_t> a(4096), b(4096), c(4096), e(4096);
  SyntheticRuntime::PageBytes(d, 0, 0, a);
  SyntheticRuntime::PageBytes(d, 1, 0, b);
  SyntheticRuntime::PageBytes(d, 0, 1, c);
  d[0] = 1;
  SyntheticRuntime::PageBytes(d, 0, 0, e);
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, e);
  std::vector<uint8_t> again(4096);
  d[0] = 0;
  SyntheticRuntime::PageBytes(d, 0, 0, again);
  EXPECT_EQ(a, again);
}

TEST(SyntheticRuntimeTest, AStopRequestEndsTurnsAtOnce) {
  HostPlanes planes(*PresetGeometry("tiny", 1, 64, 8));
  SyntheticRuntime rt(planes, nullptr);
  bool stop = false;
  rt.SetInterrupt([&stop] { return stop; });
  const uint32_t c = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(c, 100).ok());
  stop = true;
  Result<TurnReport> t = rt.Turn(c, 100);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kAborted);
  EXPECT_EQ(rt.conversation_tokens(c), 100u) << "an interrupted turn must not add tokens";
}

}  // namespace
}  // namespace strata
