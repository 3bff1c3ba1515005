#include "attach/hello_check.h"

#include <gtest/gtest.h>

#include <functional>

#include "tests/unit/attach/attach_test_support.h"

namespace strata::attach {
namespace {

using testing::Expectation;
using testing::HelloFor;
using testing::TinyGeometry;

size_t FdCount(const AttachHello& h) { return AllocationCount(h); }

TEST(AttachHelloCheckTest, AcceptsTheServedGeometryInAnyAllocationOrder) {
  AttachHello h = HelloFor(TinyGeometry());
  EXPECT_TRUE(CheckHello(h, FdCount(h), Expectation()).ok());
  std::reverse(h.ranks[0].begin(), h.ranks[0].end());
  EXPECT_TRUE(CheckHello(h, FdCount(h), Expectation()).ok());
}

TEST(AttachHelloCheckTest, RefusesEachMismatchNamingIt) {
  struct Case {
    const char* name;
    std::function<void(AttachHello&)> mutate;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"protocol", [](AttachHello& h) { h.protocol_version = 9; }, "protocol version"},
      {"model", [](AttachHello& h) { h.model_identity = "other"; },
       "model identity: the runtime declares \"other\""},
      {"state mode", [](AttachHello& h) { h.state_mode = StateMode::kCopySpeculation; },
       "state mode"},
      {"page tokens", [](AttachHello& h) { h.page_tokens = 32; },
       "page tokens: the runtime declares 32, this rank serves 64"},
      {"ranks", [](AttachHello& h) { h.ranks.push_back(h.ranks[0]); },
       "rank count: the runtime declares 2, this rank serves 1"},
      {"plane memory", [](AttachHello& h) { h.plane_handle = PlaneHandleKind::kCudaVmmFd; },
       "plane memory: the runtime declares CUDA VMM allocations (POSIX file descriptors), this "
       "rank serves memfd host memory"},
      {"row count", [](AttachHello& h) { h.ranks[0].back().count = 17; },
       "rank 0 row count: the runtime declares 17, this rank serves 16"},
      {"row unit", [](AttachHello& h) { h.ranks[0].back().unit_bytes = 4096; },
       "unit bytes: the runtime declares 4096, this rank serves 8192"},
      {"page unit", [](AttachHello& h) { h.ranks[0][0].unit_bytes = 8192; },
       "unit bytes: the runtime declares 8192, this rank serves 4096"},
      {"plane name", [](AttachHello& h) { h.ranks[0][0].name = "zz"; }, "page plane"},
      {"plane missing", [](AttachHello& h) { h.ranks[0].erase(h.ranks[0].begin()); },
       "page plane count"},
      {"page count",
       [](AttachHello& h) {
         for (auto& a : h.ranks[0])
           if (a.group == AllocationGroup::kKvPages) a.count = 65;
       },
       "rank 0 page count: the runtime declares 65, this rank serves 64"},
      {"no row", [](AttachHello& h) { h.ranks[0].pop_back(); }, "rank 0"},
      {"peer memory", [](AttachHello& h) { h.ranks[0][0].owner = MemoryOwner::kPeer; },
       "a peer's memory"},
  };
  for (const Case& c : cases) {
    AttachHello h = HelloFor(TinyGeometry());
    c.mutate(h);
    const Status s = CheckHello(h, FdCount(h), Expectation());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << c.name << ": " << s.ToString();
  }
}

TEST(AttachHelloCheckTest, RefusesAnFdCountOtherThanOnePerAllocation) {
  AttachHello h = HelloFor(TinyGeometry());
  const Status s = CheckHello(h, FdCount(h) - 1, Expectation());
  EXPECT_NE(s.message().find("shared-memory fds"), std::string::npos) << s.ToString();
}

TEST(AttachHelloCheckTest, PlaneFdsFollowTheHelloOrder) {
  AttachHello h = HelloFor(TinyGeometry());
  std::reverse(h.ranks[0].begin(), h.ranks[0].end());  // the row first
  std::vector<UniqueFd> fds;
  for (size_t i = 0; i < FdCount(h); ++i) fds.emplace_back(100 + static_cast<int>(i));
  const std::vector<PlaneFd> planes = PlaneFdsOf(h, fds, TinyGeometry());
  for (UniqueFd& fd : fds) (void)fd.Release();  // not real fds
  ASSERT_EQ(planes.size(), FdCount(h));
  EXPECT_FALSE(planes[0].page_plane.has_value());
  EXPECT_EQ(planes[0].fd, 100);
  const CacheGeometry geometry = TinyGeometry();  // kept: `g` refers into it
  const RankGeometry& g = geometry.ranks[0];
  EXPECT_EQ(g.page_planes[*planes[1].page_plane].name, h.ranks[0][1].name);
}

}  // namespace
}  // namespace strata::attach
