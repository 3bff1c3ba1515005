// Ranks in separate processes with attached runtimes: three real `strata rank`
// processes (disk tier only, one record directory each) on loopback, each
// serving its own runtime over --attach-socket. Rank zero's runtime (this test
// process) makes the store calls; each peer's runtime (a forked child) only
// shares its memfd planes, which its rank's agent copies through.
//
// Checks: stores reach every rank's record directory with the same files; a
// restore into other page ids and another state slot is byte-exact on every
// rank; a peer runtime killed with SIGKILL and restarted (fresh, zeroed planes)
// re-attaches, and the next restore lands in its new planes byte-exact; a
// store call on a peer's channel is refused. Every wait is bounded.
//
// Run by ctest with STRATA_BIN set to the `strata` binary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>

#include "tests/support/attach_cluster.h"

namespace strata::attach {
namespace {

using testing::AllocationsOf;
using testing::PeerRuntimeProcess;
using testing::RankProcess;
using testing::RecordFiles;
using testing::RuntimePlanes;
using testing::StartPlanes;
namespace fs = std::filesystem;

constexpr auto kBound = testing::kClusterBound;

template <typename Done>
bool WaitEvents(AttachClient& client, std::vector<AttachEvent>& events, Done done) {
  return strata::testing::WaitAttachEvents(client, events, kBound, done);
}

size_t Count(const std::vector<AttachEvent>& events, StoreEvent::Kind kind) {
  return strata::testing::CountStoreEvents(events, kind);
}

TEST(AttachClusterTest, PeersShareTheirPlanesAndEveryRankRestoresByteExact) {
  ASSERT_NE(std::getenv("STRATA_BIN"), nullptr) << "set STRATA_BIN to the strata binary";
  const fs::path dir =
      fs::temp_directory_path() / ("strata-attach-cluster-" + std::to_string(::getpid()));
  testing::WriteJobSecret(dir);
  const testing::ClusterWorkload w;
  const uint32_t kWorld = w.world;
  const uint64_t kConversations = w.conversations;
  std::mt19937 rng(std::random_device{}());
  const auto base = static_cast<uint16_t>(10000 + rng() % 20000);

  // Every process is forked from this single-threaded test process.
  std::vector<std::unique_ptr<RankProcess>> ranks;
  for (uint32_t r = 0; r < kWorld; ++r)
    ranks.push_back(std::make_unique<RankProcess>(w, dir, r, base));
  std::vector<std::unique_ptr<PeerRuntimeProcess>> peers;
  for (uint32_t r = 1; r < kWorld; ++r) {
    peers.push_back(
        std::make_unique<PeerRuntimeProcess>(w, ranks[r]->socket(), r, StartPlanes::kPublished));
    ASSERT_TRUE(peers.back()->attached()) << ranks[r]->Log();
  }
  RuntimePlanes planes(AllocationsOf(w.Geometry().ranks[0]));
  w.Fill(planes, 0);
  auto client = testing::AttachWithin(w, ranks[0]->socket(), 0, planes);
  ASSERT_TRUE(client.ok()) << client.status().ToString() << "\n" << ranks[0]->Log();

  for (uint64_t c = 0; c < kConversations; ++c) ASSERT_TRUE((*client)->Store(w.Checkpoint(c)).ok());
  std::vector<AttachEvent> events;
  ASSERT_TRUE(WaitEvents(**client, events, [&](const auto& e) {
    return Count(e, StoreEvent::Kind::kStored) + Count(e, StoreEvent::Kind::kStoreFailed) ==
           kConversations;
  })) << ranks[0]->Log();
  ASSERT_EQ(Count(events, StoreEvent::Kind::kStored), kConversations) << ranks[0]->Log();
  const std::set<std::string> zero = RecordFiles(dir / "rank0");
  EXPECT_EQ(zero.size(), kConversations);
  for (uint32_t r = 1; r < kWorld; ++r)
    EXPECT_EQ(RecordFiles(dir / ("rank" + std::to_string(r))), zero);

  for (uint64_t c = 0; c < kConversations; ++c) {
    ASSERT_TRUE(w.Restore(**client, c)) << ranks[0]->Log();
    EXPECT_EQ(w.Mismatches(planes, 0, c), 0u) << "rank 0, conversation " << c;
    for (uint32_t r = 1; r < kWorld; ++r) {
      EXPECT_EQ(peers[r - 1]->Mismatches(c), 0u) << "rank " << r << ", conversation " << c;
    }
  }

  // Rank 2's runtime dies and restarts with fresh planes; the next restore
  // reaches its new planes.
  peers[1]->Kill();
  peers[1] = std::make_unique<PeerRuntimeProcess>(w, ranks[2]->socket(), 2, StartPlanes::kZeroed);
  ASSERT_TRUE(peers[1]->attached()) << ranks[2]->Log();
  EXPECT_NE(peers[1]->Mismatches(0), 0u);  // zeroed: nothing restored there yet
  ASSERT_TRUE(w.Restore(**client, 0)) << ranks[0]->Log();
  EXPECT_EQ(peers[1]->Mismatches(0), 0u);
  EXPECT_EQ(peers[0]->Mismatches(0), 0u);

  EXPECT_TRUE(peers[0]->StoreIsRefused());
  EXPECT_NE(ranks[1]->Log().find("a peer rank's runtime only shares its planes"), std::string::npos)
      << ranks[1]->Log();

  EXPECT_TRUE((*client)->Close(kBound).ok());
  EXPECT_EQ(peers[1]->Quit(), 0);
  EXPECT_EQ(ranks[0]->Stop(), 0) << ranks[0]->Log();
  for (uint32_t r = 1; r < kWorld; ++r) EXPECT_EQ(ranks[r]->Stop(), 0) << ranks[r]->Log();
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace strata::attach
