// Instances whose ranks run in separate processes share through a pool
// manager on their host (docs/pool.md, "Ranks in separate processes"): a
// `strata pool` and two instances of two `strata rank` processes each (disk
// tier only, small enough that records are evicted), every rank serving its
// own runtime over --attach-socket (rank zero's in this test process, each
// peer's a forked child, as in attach_cluster_test.cc).
//
// Checks: instance A stores conversations; those every rank's disk evicts
// are read back from both ranks and reach the manager; instance B, which
// never saw them and attaches over the manager's TCP address (the job-secret
// proof, the named arena mapped by path; A is on the Unix socket), restores
// one byte-exact into both of its ranks' planes,
// and holds it on both ranks' disks afterwards; the manager's /metrics
// counts the put and the claim. Run twice: as described, and with both
// instances over TCP with the data channel forced (--prefix-cache-pool-data
// tcp, as instances on other hosts: A's puts and B's claim move window by
// window through their data connections, counted in the manager's
// strata_pool_data_bytes_total). Every wait is bounded.
//
// Run by ctest with STRATA_BIN set to the `strata` binary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include "store/tier/disk_files.h"
#include "tests/support/attach_cluster.h"
#include "tests/support/pool_instances.h"

namespace strata::attach {
namespace {

namespace fs = std::filesystem;
namespace cluster = testing;  // tests/support/attach_cluster.h

constexpr auto kBound = testing::kClusterBound;
// A lookup that misses the 2 ms lookup grace answers locally (docs/pool.md);
// a miss is asked again, at most this many times.
constexpr int kLookupAttempts = 50;

// Two ranks, five conversations of four pages.
testing::ClusterWorkload Workload() {
  testing::ClusterWorkload w;
  w.world = 2;
  w.conversations = 5;
  return w;
}

// Stores `checkpoint`, offering it again while the disk answers kDeferred
// (its evictions' files are still being read for the pool and unlinked),
// and waits for its kStored.
::testing::AssertionResult StoreOnceRoomIsMade(AttachClient& client,
                                               const PublishedCheckpoint& checkpoint) {
  const auto deadline = std::chrono::steady_clock::now() + kBound;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!client.Store(checkpoint).ok()) return ::testing::AssertionFailure() << "store not sent";
    std::vector<AttachEvent> events;
    const auto answer = [&](const AttachEvent& e) {
      const auto* a = std::get_if<StoreAnswer>(&e);
      return a != nullptr && a->checkpoint_id == checkpoint.checkpoint_id;
    };
    if (!strata::testing::WaitAttachEvents(client, events, kBound, [&](const auto& got) {
          return std::any_of(got.begin(), got.end(), answer);
        })) {
      return ::testing::AssertionFailure() << "no store answer";
    }
    const StoreOutcome outcome =
        std::get<StoreAnswer>(*std::find_if(events.begin(), events.end(), answer)).outcome;
    if (outcome == StoreOutcome::kDeferred || outcome == StoreOutcome::kRetry) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (outcome != StoreOutcome::kQueued) {
      return ::testing::AssertionFailure() << "store answered " << StoreOutcomeName(outcome);
    }
    if (!strata::testing::WaitAttachEvents(client, events, kBound, [](const auto& got) {
          return strata::testing::CountStoreEvents(got, StoreEvent::Kind::kStored) +
                     strata::testing::CountStoreEvents(got, StoreEvent::Kind::kStoreFailed) >
                 0;
        })) {
      return ::testing::AssertionFailure() << "no store event";
    }
    if (strata::testing::CountStoreEvents(events, StoreEvent::Kind::kStored) == 1) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "checkpoint " << checkpoint.checkpoint_id << " failed to store";
  }
  return ::testing::AssertionFailure() << "no room was made within the bound";
}

// One instance of the job: its ranks' processes under dir/NAME.
struct Instance {
  // `pool`: the manager's address (a Unix socket path or tcp://HOST:PORT).
  // `data`: --prefix-cache-pool-data's value (empty: the default).
  Instance(const testing::ClusterWorkload& w, const fs::path& root, const std::string& name,
           uint16_t base, const std::string& pool, const std::string& data = {})
      : dir(root / name) {
    testing::WriteJobSecret(dir);
    std::vector<std::string> flags{"--prefix-cache-pool", pool, "--prefix-cache-pool-instance",
                                   name};
    if (!data.empty()) flags.insert(flags.end(), {"--prefix-cache-pool-data", data});
    for (uint32_t r = 0; r < w.world; ++r) {
      ranks.push_back(std::make_unique<cluster::RankProcess>(w, dir, r, base, flags));
    }
  }
  std::string Logs() const {
    std::string out;
    for (const auto& r : ranks) out += r->Log();
    return out;
  }
  fs::path dir;
  std::vector<std::unique_ptr<cluster::RankProcess>> ranks;
};

// How the instances reach the manager: A on the Unix socket and B over TCP
// mapping the arena's file, or both through the TCP data channel.
enum class Reach : uint8_t { kArena, kDataChannel };

void ShareEvictedRecords(Reach reach) {
  ASSERT_NE(std::getenv("STRATA_BIN"), nullptr) << "set STRATA_BIN to the strata binary";
  const fs::path root =
      fs::temp_directory_path() / ("strata-pool-cluster-" + std::to_string(::getpid()));
  fs::create_directories(root);
  std::mt19937 rng(std::random_device{}());
  const auto base = static_cast<uint16_t>(10000 + rng() % 20000);
  testing::ClusterWorkload w = Workload();
  // Every rank's disk holds two and a half conversations: storing five
  // evicts the first ones, on both ranks.
  const uint64_t record =
      RecordFileBytes(RecordLayout(*PresetGeometry("tiny", 1, w.pages, w.rows)), {.tail_pages = 4});
  w.disk_limit = std::to_string(2 * record + record / 2);

  // The manager also listens on TCP (the job secret the instances share, a
  // named arena): instance a attaches on the Unix socket, b over TCP.
  testing::WriteJobSecret(root / "manager");
  const std::string tcp = "127.0.0.1:" + std::to_string(base + 60);
  strata::testing::ChildProcess manager(
      {std::getenv("STRATA_BIN"), "pool", "--name", "cluster-test", "--socket",
       (root / "pool.sock").string(), "--slot-kib", "64", "--slots", "64", "--no-huge-pages",
       "--metrics-port", std::to_string(base + 50), "--arena-file", (root / "arena").string(),
       "--tcp", tcp, "--job-secret-file", (root / "manager" / "job.secret").string()},
      (root / "pool.log").string());
  ASSERT_TRUE(strata::testing::WaitForFile(root / "pool.sock", kBound)) << manager.Log();

  // Every process is forked before this one attaches anything (no thread yet).
  const bool channel = reach == Reach::kDataChannel;
  Instance a(w, root, "a", base, channel ? "tcp://" + tcp : (root / "pool.sock").string(),
             channel ? "tcp" : "");
  Instance b(w, root, "b", static_cast<uint16_t>(base + 100), "tcp://" + tcp, channel ? "tcp" : "");
  cluster::PeerRuntimeProcess a_peer(w, a.ranks[1]->socket(), 1, cluster::StartPlanes::kPublished);
  ASSERT_TRUE(a_peer.attached()) << a.Logs();
  cluster::PeerRuntimeProcess b_peer(w, b.ranks[1]->socket(), 1, cluster::StartPlanes::kZeroed);
  ASSERT_TRUE(b_peer.attached()) << b.Logs();

  // A stores every conversation; both ranks' disks evict the oldest to the pool.
  cluster::RuntimePlanes a_planes(cluster::AllocationsOf(w.Geometry().ranks[0]));
  w.Fill(a_planes, 0);
  auto a_client = testing::AttachWithin(w, a.ranks[0]->socket(), 0, a_planes);
  ASSERT_TRUE(a_client.ok()) << a_client.status().ToString() << "\n" << a.Logs();
  for (uint64_t c = 0; c < w.conversations; ++c) {
    ASSERT_TRUE(StoreOnceRoomIsMade(**a_client, w.Checkpoint(c))) << "conversation " << c << "\n"
                                                                  << a.Logs();
  }
  ASSERT_TRUE(strata::testing::SampleAtLeast(
      static_cast<uint16_t>(base + 50), "strata_pool_puts_total{stage=\"committed\"}", 1, kBound))
      << a.Logs() << manager.Log();
  EXPECT_EQ(cluster::RecordFiles(a.dir / "rank0"), cluster::RecordFiles(a.dir / "rank1"));

  // B never saw conversation 0: it comes from the pool into both ranks' planes.
  cluster::RuntimePlanes b_planes(cluster::AllocationsOf(w.Geometry().ranks[0]));
  auto b_client = testing::AttachWithin(w, b.ranks[0]->socket(), 0, b_planes);
  ASSERT_TRUE(b_client.ok()) << b_client.status().ToString() << "\n" << b.Logs();
  EXPECT_NE(w.Mismatches(b_planes, 0, 0), 0u);  // nothing there yet
  EXPECT_NE(b_peer.Mismatches(0), 0u);
  ::testing::AssertionResult restored = ::testing::AssertionFailure();
  for (int attempt = 0; attempt < kLookupAttempts && !restored; ++attempt) {
    restored = w.Restore(**b_client, 0);
  }
  ASSERT_TRUE(restored) << b.Logs() << manager.Log();
  EXPECT_EQ(w.Mismatches(b_planes, 0, 0), 0u) << "rank 0";
  EXPECT_EQ(b_peer.Mismatches(0), 0u) << "rank 1";
  // The claim landed on both of B's disks.
  const std::set<std::string> b_files = cluster::RecordFiles(b.dir / "rank0");
  EXPECT_EQ(b_files.size(), 1u);
  EXPECT_EQ(cluster::RecordFiles(b.dir / "rank1"), b_files);

  using strata::testing::MetricSample;
  const std::string metrics =
      strata::testing::HttpGet(static_cast<uint16_t>(base + 50), "/metrics");
  EXPECT_GE(MetricSample(metrics, "strata_pool_claims_total"), 1u) << metrics;
  EXPECT_GE(MetricSample(metrics, "strata_pool_sessions"), 2u) << metrics;
  if (channel) {
    EXPECT_GE(MetricSample(metrics, "strata_pool_data_bytes_total{direction=\"in\"}"), 1u)
        << metrics;
    EXPECT_GE(MetricSample(metrics, "strata_pool_data_bytes_total{direction=\"out\"}"), 1u)
        << metrics;
    EXPECT_EQ(MetricSample(metrics, "strata_pool_data_windows_refused_total"), 0u) << metrics;
  }
  EXPECT_NE(b.ranks[1]->Log().find("rank zero owns the pool session"), std::string::npos)
      << b.ranks[1]->Log();

  EXPECT_TRUE((*a_client)->Close(kBound).ok());
  EXPECT_TRUE((*b_client)->Close(kBound).ok());
  EXPECT_EQ(a_peer.Quit(), 0);
  EXPECT_EQ(b_peer.Quit(), 0);
  for (Instance* i : {&a, &b}) {
    for (auto& r : i->ranks) EXPECT_EQ(r->Stop(), 0) << r->Log();
  }
  EXPECT_EQ(manager.Stop(kBound), 0) << manager.Log();
  if (!::testing::Test::HasFailure()) fs::remove_all(root);
}

TEST(PoolClusterTest, InstancesOfSeveralProcessesShareEvictedRecordsThroughTheManager) {
  ShareEvictedRecords(Reach::kArena);
}

TEST(PoolClusterTest, InstancesThroughTheTcpDataChannelShareEvictedRecordsByteExact) {
  ShareEvictedRecords(Reach::kDataChannel);
}

}  // namespace
}  // namespace strata::attach
