// The pool manager SIGKILLed in the middle of a claim, then restarted, with
// real processes: a `strata pool` and two `strata rank` instances (memory tier
// only, small enough that records are evicted) whose runtimes this test
// attaches. The instances reach the manager through a PoolProxy
// (tests/support/pool_proxy.h), which stops B's claim at a chosen message and
// SIGKILLs the manager right there, so the kill lands inside the claim
// deterministically. One round per kill point:
//   - before the claim reaches the manager;
//   - the claim granted, its answer not yet delivered to B;
//   - the claim granted and copied out by B, its release not delivered.
// Each round checks that B recomputes (its restore fails, its planes
// untouched: nothing restored, so nothing corrupt), or, killed only after B
// copied and checked every record, restores byte-exact, and stays up; that the manager restarted
// with the same --name and socket holds nothing of the old arena (docs/pool.md: a restart starts a
// new, empty arena); that A and B reconnect without a restart (at most once a second, on their next
// lookup); and that sharing resumes: A's new evictions reach the new manager and B restores one
// byte-exact. Every wait is bounded and waits on an event. A second test
// restarts a manager on a named arena (--arena-file) and checks that it
// keeps its generation (other sizes start a new one).
//
// Run by ctest with STRATA_BIN set to the `strata` binary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <span>

#include "tests/support/attach_conversations.h"
#include "tests/support/child_process.h"
#include "tests/support/pool_instances.h"
#include "tests/support/pool_proxy.h"
#include "tests/support/wait_for_file.h"
#include "tests/unit/attach/attach_test_support.h"

namespace strata::attach {
namespace {

using namespace std::chrono_literals;
using strata::testing::PoolHop;
using testing::AllocationsOf;
using testing::RuntimePlanes;
namespace fs = std::filesystem;

constexpr uint64_t kPagesPerConversation = 4;
// Three conversations at the start and three per round, three rounds.
constexpr uint64_t kConversations = 12;
constexpr uint64_t kPages = 2 * kConversations * kPagesPerConversation;  // sources, then restores
constexpr uint64_t kRows = 2 * kConversations;
// Slots of an instance's memory tier: two 5-slot records (4 pages + a row),
// so each conversation stored past the second evicts the oldest to the pool.
constexpr uint64_t kMemorySlots = 11;
constexpr uint64_t kUnknownConversation = 1000;  // never stored anywhere
// A lookup that misses the 2 ms lookup grace answers locally (docs/pool.md);
// a miss is asked again, at most this many times.
constexpr int kLookupAttempts = 50;
constexpr auto kBound = 30s;
constexpr int kKilledExit = 128 + SIGKILL;

CacheGeometry Geometry() { return *PresetGeometry("tiny", 1, kPages, kRows); }

// The bytes A publishes for conversation c, and where (B restores them
// into units of its own).
strata::testing::UnitByte Bytes(uint64_t c) { return strata::testing::PublishedBytes(c); }
strata::testing::ConversationUnits SourceUnits(uint64_t c) {
  return strata::testing::PublishedUnits(c, kPagesPerConversation);
}
strata::testing::ConversationUnits RestoredUnits(uint64_t c) {
  return strata::testing::NthConversationUnits(c, kPagesPerConversation,
                                               kConversations * kPagesPerConversation,
                                               static_cast<uint32_t>(kConversations + c));
}
std::vector<Token> Tokens(uint64_t c) {
  return strata::testing::ConversationTokens(c * 100'000,
                                             kPagesPerConversation * Geometry().page_tokens);
}

// Every byte of B's units for conversation c, as they are now.
std::vector<uint8_t> RestoredBytes(RuntimePlanes& planes, uint64_t c) {
  std::vector<uint8_t> out;
  strata::testing::ForEachConversationUnit(
      planes, RestoredUnits(c), [&](size_t a, uint64_t, const uint8_t* unit) {
        out.insert(out.end(), unit, unit + planes.allocations[a].unit_bytes);
      });
  return out;
}

class Child : public strata::testing::ChildProcess {
 public:
  using ChildProcess::ChildProcess;
  int Stop() { return ChildProcess::Stop(kBound); }
};

std::string Bin() { return std::getenv("STRATA_BIN"); }

// Where B's claim stops and the manager dies.
struct KillPoint {
  const char* name;
  PoolHop hop;
  bool (*kind)(const pool::PoolMessage&);
  uint64_t claims_in_flight;  // the manager's gauge just before the kill
  // Whether B's restore lands anyway: past its copies, a claim's records are
  // checked and B's own, so a manager lost before the release costs nothing.
  bool restores;
};

constexpr std::array<KillPoint, 3> kKillPoints{{
    {"before the claim reaches the manager", PoolHop::kToManager,
     &strata::testing::IsPoolMessage<pool::PoolClaim>, 0, false},
    {"claim granted, answer not delivered", PoolHop::kToInstance,
     &strata::testing::IsPoolMessage<pool::PoolClaimAnswer>, 1, false},
    {"claim granted and copied, not released", PoolHop::kToManager,
     &strata::testing::IsPoolMessage<pool::PoolRelease>, 1, true},
}};

class PoolManagerRestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(std::getenv("STRATA_BIN"), nullptr) << "set STRATA_BIN to the strata binary";
    dir_ = fs::temp_directory_path() / ("strata-pool-restart-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::mt19937 rng(std::random_device{}());
    base_ = static_cast<uint16_t>(10000 + rng() % 20000);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // The manager's metrics port in its `generation`-th run (a fresh port each
  // run: the killed one's may linger).
  uint16_t ManagerPort(int generation) const {
    return static_cast<uint16_t>(base_ + 10 + generation);
  }

  // Starts the manager's `generation`-th run, always the same --name and
  // socket, and waits until it serves (its socket and metrics).
  ::testing::AssertionResult StartManager(int generation) {
    const fs::path log = dir_ / ("pool-" + std::to_string(generation) + ".log");
    manager_ = std::make_unique<Child>(
        std::vector<std::string>{Bin(), "pool", "--name", "restart-test", "--socket",
                                 (dir_ / "manager.sock").string(), "--slot-kib", "64", "--slots",
                                 "64", "--no-huge-pages", "--metrics-port",
                                 std::to_string(ManagerPort(generation))},
        log.string());
    if (!strata::testing::WaitForFileText(log, "metrics at", kBound)) {
      return ::testing::AssertionFailure() << "the manager did not start\n" << manager_->Log();
    }
    return ::testing::AssertionSuccess();
  }

  strata::testing::PoolInstanceSpec Spec(const std::string& name, uint16_t metrics_port) const {
    return {.dir = dir_,
            .name = name,
            .pages = kPages,
            .rows = kRows,
            .memory_slots = kMemorySlots,
            .pool_socket = dir_ / "pool.sock",  // the proxy's
            .metrics_port = metrics_port};
  }

  // A stores the next three conversations; returns the first, which its
  // memory tier evicts to the pool (with the two it held before).
  uint64_t StoreThree(AttachClient& a) {
    const uint64_t first = next_;
    for (; next_ < first + 3; ++next_) {
      EXPECT_TRUE(strata::testing::StoreAndAwait(
          a, strata::testing::ConversationCheckpoint(Tokens(next_), next_ + 1, SourceUnits(next_)),
          kBound));
    }
    return first;
  }

  fs::path dir_;
  uint16_t base_ = 0;
  std::unique_ptr<Child> manager_;
  uint64_t next_ = 0;  // A's next conversation
};

// Restores conversation c into B's RestoredUnits, asking again after a lookup
// that found nothing (a missed grace).
::testing::AssertionResult Restore(AttachClient& b, uint64_t c) {
  const InboundTicket ticket =
      strata::testing::ConversationTicket(JobId(100 + c), RestoredUnits(c));
  ::testing::AssertionResult last = ::testing::AssertionFailure();
  for (int attempt = 0; attempt < kLookupAttempts && !last; ++attempt) {
    last = strata::testing::LookupAndRestore(b, Tokens(c), ticket, kBound,
                                             strata::testing::AwaitRestore::kFetched);
  }
  return last << " (conversation " << c << ")";
}

// An instance as the test reaches it: its runtime's client, its /metrics.
struct Instance {
  AttachClient& client;
  uint16_t metrics_port;
};

// Looks up a prefix no one holds over each instance until the manager whose
// /metrics are on `manager_port` counts a session for every one. An instance
// reconnects at most once a second, on a lookup or an eviction.
::testing::AssertionResult Reconnected(std::span<const Instance> instances, uint16_t manager_port) {
  const auto deadline = std::chrono::steady_clock::now() + kBound;
  uint64_t sessions = 0;
  while ((sessions = strata::testing::ScrapeSample(manager_port, "strata_pool_sessions")) !=
         instances.size()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return ::testing::AssertionFailure() << sessions << " sessions at the manager";
    }
    for (const Instance& i : instances) {
      if (strata::testing::Finds(i.client, Tokens(kUnknownConversation), kBound)) {
        return ::testing::AssertionFailure() << "found a prefix no one stored";
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// Whether `sample` on the /metrics at `port` reaches `value` within kBound
// (an instance publishes its metrics once a second).
::testing::AssertionResult SampleReaches(uint16_t port, const std::string& sample, uint64_t value) {
  const auto deadline = std::chrono::steady_clock::now() + kBound;
  uint64_t seen = 0;
  while ((seen = strata::testing::ScrapeSample(port, sample)) != value) {
    if (std::chrono::steady_clock::now() > deadline) {
      return ::testing::AssertionFailure() << sample << " is " << seen << ", not " << value;
    }
  }
  return ::testing::AssertionSuccess();
}

TEST_F(PoolManagerRestartTest, KilledMidClaimInstanceRecomputesThenSharingResumesAfterRestart) {
  ASSERT_TRUE(StartManager(0));
  auto proxy = strata::testing::PoolProxy::Start((dir_ / "pool.sock").string(),
                                                 (dir_ / "manager.sock").string());
  ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();

  const auto a_spec = Spec("a", base_ + 1);
  Child a(strata::testing::PoolInstanceArgs(Bin(), a_spec), a_spec.log().string());
  const auto b_spec = Spec("b", base_ + 2);
  Child b(strata::testing::PoolInstanceArgs(Bin(), b_spec), b_spec.log().string());
  RuntimePlanes a_planes(AllocationsOf(Geometry().ranks[0]));
  RuntimePlanes b_planes(AllocationsOf(Geometry().ranks[0]));
  for (uint64_t c = 0; c < kConversations; ++c) {
    strata::testing::FillConversation(a_planes, SourceUnits(c), Bytes(c));
  }
  auto a_client = strata::testing::AttachRuntime(a_spec, a_planes, kBound);
  ASSERT_TRUE(a_client.ok()) << a_client.status().ToString() << "\n" << a.Log();
  auto b_client = strata::testing::AttachRuntime(b_spec, b_planes, kBound);
  ASSERT_TRUE(b_client.ok()) << b_client.status().ToString() << "\n" << b.Log();

  uint64_t target = StoreThree(**a_client);  // pooled; B never saw it
  for (int round = 0; round < static_cast<int>(kKillPoints.size()); ++round) {
    const KillPoint& point = kKillPoints[round];
    SCOPED_TRACE(point.name);
    ASSERT_TRUE(strata::testing::SampleAtLeast(
        ManagerPort(round), "strata_pool_puts_total{stage=\"committed\"}", 1, kBound))
        << manager_->Log();

    // B's claim of `target` stops at the kill point; the manager dies there.
    const std::vector<uint8_t> before = RestoredBytes(b_planes, target);
    uint64_t in_flight_at_kill = ~0ull;
    int manager_exit = 0;
    const uint64_t fired = (*proxy)->fired();
    (*proxy)->Arm({.hop = point.hop, .kind = point.kind, .action = [&, round] {
                     in_flight_at_kill = strata::testing::ScrapeSample(
                         ManagerPort(round), "strata_pool_claims_in_flight");
                     manager_exit = manager_->Kill(kBound);
                   }});
    // Admission answers with the pool's chain and the restore claims it; a
    // lookup that missed the grace answers nothing and is asked again.
    const InboundTicket ticket =
        strata::testing::ConversationTicket(JobId(100 + target), RestoredUnits(target));
    ::testing::AssertionResult restored = ::testing::AssertionFailure();
    for (int attempt = 0; attempt < kLookupAttempts && (*proxy)->fired() == fired; ++attempt) {
      restored = strata::testing::LookupAndRestore(**b_client, Tokens(target), ticket, kBound,
                                                   strata::testing::AwaitRestore::kFetched);
    }
    ASSERT_EQ((*proxy)->fired(), fired + 1) << "B never claimed\n" << b.Log();
    EXPECT_EQ(manager_exit, kKilledExit);
    EXPECT_EQ(in_flight_at_kill, point.claims_in_flight);
    if (point.restores) {
      EXPECT_TRUE(restored) << b.Log();
      EXPECT_EQ(
          strata::testing::ConversationMismatches(b_planes, RestoredUnits(target), Bytes(target)),
          0u);
    } else {
      EXPECT_FALSE(restored) << "the restore must fail: " << b.Log();
      EXPECT_EQ(RestoredBytes(b_planes, target), before) << "B restored something";
    }

    // The same --name and socket again: a new, empty arena.
    ASSERT_TRUE(StartManager(round + 1));
    EXPECT_EQ(strata::testing::ScrapeSample(ManagerPort(round + 1), "strata_pool_records"), 0u);

    // Both instances reattach, neither restarted; the old arena is gone.
    const std::array<Instance, 2> instances{
        {{**a_client, a_spec.metrics_port}, {**b_client, b_spec.metrics_port}}};
    ASSERT_TRUE(Reconnected(instances, ManagerPort(round + 1))) << a.Log() << b.Log();
    // The new arena holds nothing, but A's runtime still holds what it
    // published and announces it again (exports, docs/pool.md): once the
    // manager counts A's holdings, B finds the target either way (its own
    // copy when it restored it, else A's holding).
    ASSERT_TRUE(strata::testing::SampleAtLeast(ManagerPort(round + 1), "strata_pool_holdings", 3,
                                               kBound));  // at least A's first three
    // A lookup whose pool answer missed the 2 ms grace (a loaded machine)
    // answers from B alone: asked again, as Restore does.
    ::testing::AssertionResult found = ::testing::AssertionFailure();
    for (int attempt = 0; attempt < kLookupAttempts && !found; ++attempt) {
      found = strata::testing::Finds(**b_client, Tokens(target), kBound);
    }
    EXPECT_TRUE(found) << b.Log();

    // Sharing resumes: A evicts what it held and the first of three more to
    // the new manager; B restores one byte-exact.
    const uint64_t held = next_ - 2;
    target = StoreThree(**a_client);
    EXPECT_TRUE(strata::testing::SampleAtLeast(
        ManagerPort(round + 1), "strata_pool_puts_total{stage=\"committed\"}", 3, kBound));
    ASSERT_TRUE(Restore(**b_client, held)) << b.Log() << manager_->Log();
    EXPECT_EQ(strata::testing::ConversationMismatches(b_planes, RestoredUnits(held), Bytes(held)),
              0u);
  }

  // Each round: one reconnect of each instance, and at B one failed claim
  // unless the restore landed.
  const uint64_t rounds = kKillPoints.size();
  uint64_t failed = 0;
  for (const KillPoint& point : kKillPoints) failed += point.restores ? 0 : 1;
  EXPECT_TRUE(SampleReaches(b_spec.metrics_port,
                            "strata_pool_client_claims_total{outcome=\"failed\"}", failed));
  EXPECT_TRUE(SampleReaches(b_spec.metrics_port, "strata_pool_client_reconnects_total", rounds));
  EXPECT_TRUE(SampleReaches(a_spec.metrics_port, "strata_pool_client_reconnects_total", rounds));

  EXPECT_TRUE((*a_client)->Close(kBound).ok());
  EXPECT_TRUE((*b_client)->Close(kBound).ok());
  EXPECT_EQ(a.Stop(), 0) << a.Log();
  EXPECT_EQ(b.Stop(), 0) << b.Log();
  EXPECT_EQ(manager_->Stop(), 0) << manager_->Log();
}

// `strata pool --arena-file`: stopped and started again on the same file
// and sizes, the manager keeps its generation (docs/pool.md, restarts), so an
// instance with a registered arena keeps sharing; other sizes start anew.
TEST_F(PoolManagerRestartTest, ANamedArenaKeepsItsGenerationAcrossARestart) {
  const auto run = [&](const std::string& name, const std::string& slots) {
    const fs::path log = dir_ / (name + ".log");
    Child manager({Bin(), "pool", "--name", "named", "--socket", (dir_ / "named.sock").string(),
                   "--slot-kib", "64", "--slots", slots, "--arena-file", (dir_ / "arena").string()},
                  log.string());
    EXPECT_TRUE(strata::testing::WaitForFileText(log, " on ", kBound)) << manager.Log();
    EXPECT_EQ(manager.Stop(), 0) << manager.Log();
    const std::string text = manager.Log();
    const size_t at = text.find("generation ");
    return std::pair(at == std::string::npos ? std::string() : text.substr(at + 11, 16), text);
  };
  const auto [first, first_log] = run("named-1", "16");
  ASSERT_EQ(first.size(), 16u) << first_log;
  EXPECT_NE(first_log.find("(named arena, new)"), std::string::npos) << first_log;
  const auto [second, second_log] = run("named-2", "16");
  EXPECT_EQ(second, first) << second_log;
  EXPECT_NE(second_log.find("named arena reopened"), std::string::npos) << second_log;
  const auto [third, third_log] = run("named-3", "32");  // other sizes: a new arena
  EXPECT_NE(third, first) << third_log;
  EXPECT_NE(third_log.find("(named arena, new)"), std::string::npos) << third_log;
}

}  // namespace
}  // namespace strata::attach
