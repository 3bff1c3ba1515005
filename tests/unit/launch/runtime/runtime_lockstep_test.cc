// The runtime's lockstep channel over loopback: rank zero's side admits the
// peers' runtimes (threads here), sends them page work, and collects answers.
#include "launch/runtime/runtime_lockstep.h"

#include "launch/runtime/lockstep_frames.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "launch/presets.h"
#include "store/transfer/host_planes.h"

namespace strata {
namespace {

using namespace std::chrono_literals;

constexpr auto kBound = 10s;
const LockstepOptions kOptions{.token = std::string(kLockstepTokenChars, 'k'), .io_bound = kBound};

PageWork Work(PageWorkKind kind) {
  PageWork w{.kind = kind,
             .page_prefixes = {},
             .pages = {},
             .row = StateSlot(1),
             .endpoint = {.consumed = 64, .digest = {}}};
  w.page_prefixes.push_back(Digest128{});
  w.pages.push_back(PageId(5));
  return w;
}

// A peer's runtime on its own thread: joins as `rank`, applies work to its
// own planes until done; `corrupt` flips a byte of its page after computing.
struct Peer {
  Peer(uint16_t port, uint32_t rank, const LockstepOptions& options = kOptions)
      : planes(*PresetGeometry("tiny", 1, 16, 4)) {
    joined = std::async(std::launch::async, [this, port, rank, options]() -> Status {
      Result<std::unique_ptr<LockstepFollower>> f =
          LockstepFollower::Join("127.0.0.1", port, rank, kBound, options);
      if (!f.ok()) return f.status();
      return (*f)->Serve(
          [this, rank](const PageWork& w) -> Result<PageWorkReport> {
            Result<PageWorkReport> r = ApplyPageWork(planes, 0, rank, w);
            if (corrupt && w.kind == PageWorkKind::kCompute) planes.page(0, 0, w.pages[0])[7] ^= 1;
            return r;
          },
          [this] { return stop.load(); }, 10ms);
    });
  }
  // A test that failed early must not wait for rank zero's done forever.
  ~Peer() { stop = true; }
  HostPlanes planes;
  std::atomic<bool> corrupt{false};
  std::atomic<bool> stop{false};
  std::future<Status> joined;
};

TEST(RuntimeLockstepTest, PeersComputeAndVerifyTheirOwnPages) {
  auto leader = LockstepLeader::Listen("127.0.0.1", 0, kOptions);
  ASSERT_TRUE(leader.ok()) << leader.status().ToString();
  Peer one((*leader)->port(), 1);
  Peer two((*leader)->port(), 2);
  ASSERT_TRUE((*leader)->AdmitPeers(3, kBound).ok());
  ASSERT_TRUE((*leader)->Apply(Work(PageWorkKind::kCompute)).ok());
  Result<PageWorkReport> checked = (*leader)->Apply(Work(PageWorkKind::kVerify));
  ASSERT_TRUE(checked.ok()) << checked.status().ToString();
  const RankGeometry& g = one.planes.geometry().ranks[0];
  EXPECT_EQ(checked->checked_bytes, 2 * (g.page_bytes() + g.row.unit_bytes));
  ASSERT_TRUE((*leader)->Finish().ok());
  EXPECT_TRUE(one.joined.get().ok());
  EXPECT_TRUE(two.joined.get().ok());
}

TEST(RuntimeLockstepTest, APeersMismatchNamesItsRank) {
  auto leader = LockstepLeader::Listen("127.0.0.1", 0, kOptions);
  ASSERT_TRUE(leader.ok());
  Peer one((*leader)->port(), 1);
  Peer two((*leader)->port(), 2);
  two.corrupt = true;
  ASSERT_TRUE((*leader)->AdmitPeers(3, kBound).ok());
  ASSERT_TRUE((*leader)->Apply(Work(PageWorkKind::kCompute)).ok());
  Result<PageWorkReport> checked = (*leader)->Apply(Work(PageWorkKind::kVerify));
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.status().code(), StatusCode::kCorruption);
  EXPECT_NE(checked.status().message().find("rank 2"), std::string::npos);
  EXPECT_TRUE((*leader)->Finish().ok());  // the channel stayed in step
}

TEST(RuntimeLockstepTest, AHelloWithoutTheJobsTokenIsDropped) {
  auto leader = LockstepLeader::Listen("127.0.0.1", 0, kOptions);
  ASSERT_TRUE(leader.ok());
  LockstepOptions stranger = kOptions;
  stranger.token = std::string(kLockstepTokenChars, 'x');
  Peer impostor((*leader)->port(), 1, stranger);
  Peer real((*leader)->port(), 1);
  ASSERT_TRUE((*leader)->AdmitPeers(2, kBound).ok());
  ASSERT_TRUE((*leader)->Finish().ok());
  EXPECT_TRUE(real.joined.get().ok());
  EXPECT_EQ(impostor.joined.get().code(), StatusCode::kUnavailable);
}

TEST(RuntimeLockstepTest, AMissingPeerEndsTheJoinAtTheBound) {
  auto leader = LockstepLeader::Listen("127.0.0.1", 0, kOptions);
  ASSERT_TRUE(leader.ok());
  Status admitted = (*leader)->AdmitPeers(2, 50ms);
  EXPECT_EQ(admitted.code(), StatusCode::kUnavailable);
  EXPECT_NE(admitted.message().find("1 peer runtime"), std::string::npos);
}

TEST(RuntimeLockstepTest, APeerThatWentAwayIsUnavailable) {
  auto leader = LockstepLeader::Listen("127.0.0.1", 0, kOptions);
  ASSERT_TRUE(leader.ok());
  {
    Peer one((*leader)->port(), 1);
    ASSERT_TRUE((*leader)->AdmitPeers(2, kBound).ok());
    ASSERT_TRUE((*leader)->Finish().ok());  // the peer's Serve returns, its socket closes
    ASSERT_TRUE(one.joined.get().ok());
  }
  Result<PageWorkReport> r = (*leader)->Apply(Work(PageWorkKind::kCompute));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("rank 1"), std::string::npos);
}

}  // namespace
}  // namespace strata
