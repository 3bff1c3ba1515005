// Instances sharing through a pool manager on one host, as real processes: a
// `strata pool` and `strata rank` instances (one process each, memory tier
// only, small enough that records are evicted), each serving a runtime that
// this test process attaches over --attach-socket.
//
// Checks: instance A stores conversations; the ones its memory tier evicts go
// to the manager; instance B, which never saw them, restores one byte-exact
// into its own planes from the pool; after A exits, B restores another; an
// instance with another layout (another preset: another fingerprint) finds
// nothing; the manager's /metrics counts the claims. Every wait is bounded.
//
// Run by ctest with STRATA_BIN set to the `strata` binary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "tests/support/attach_conversations.h"
#include "tests/support/attach_events.h"
#include "tests/support/child_process.h"
#include "tests/support/pool_instances.h"
#include "tests/support/wait_for_file.h"
#include "tests/unit/attach/attach_test_support.h"

namespace strata::attach {
namespace {

using namespace std::chrono_literals;
using testing::AllocationsOf;
using testing::RuntimePlanes;
namespace fs = std::filesystem;

constexpr uint64_t kPages = 64;  // page ids per instance
constexpr uint64_t kRows = 16;
constexpr uint64_t kPagesPerConversation = 4;
constexpr uint64_t kConversations = 5;
// Slots of an instance's memory tier: two 5-slot records (4 pages + a row),
// so storing conversations 2, 3 and 4 evicts 0, 1 and 2 to the pool.
constexpr uint64_t kMemorySlots = 11;
// A lookup that misses the 2 ms lookup grace answers locally (docs/pool.md);
// a miss is asked again, at most this many times.
constexpr int kLookupAttempts = 50;
constexpr auto kBound = 30s;

CacheGeometry Geometry(const std::string& preset) {
  return *PresetGeometry(preset, 1, kPages, kRows);
}

// The bytes A publishes for conversation c, and where (B restores them
// into units of its own).
strata::testing::UnitByte Bytes(uint64_t c) { return strata::testing::PublishedBytes(c); }
strata::testing::ConversationUnits SourceUnits(uint64_t c) {
  return strata::testing::PublishedUnits(c, kPagesPerConversation);
}
strata::testing::ConversationUnits RestoredUnits(uint64_t c) {
  return strata::testing::NthConversationUnits(c, kPagesPerConversation, 40,
                                               static_cast<uint32_t>(10 + c % 6));
}

void Fill(RuntimePlanes& planes) {
  for (uint64_t c = 0; c < kConversations; ++c) {
    strata::testing::FillConversation(planes, SourceUnits(c), Bytes(c));
  }
}

// Bytes of conversation c's restored units that differ from what A published.
uint64_t Mismatches(const RuntimePlanes& planes, uint64_t c) {
  return strata::testing::ConversationMismatches(planes, RestoredUnits(c), Bytes(c));
}

// A child process running `args` with its output in `log`; Stop is bounded.
class Child : public strata::testing::ChildProcess {
 public:
  using ChildProcess::ChildProcess;
  int Stop() { return ChildProcess::Stop(kBound); }
};

std::string Bin() { return std::getenv("STRATA_BIN"); }

// One instance: a `strata rank` with the pool and an attach socket.
strata::testing::PoolInstanceSpec Spec(const fs::path& dir, const std::string& name,
                                       const std::string& preset, uint16_t metrics_port) {
  return {.dir = dir,
          .name = name,
          .preset = preset,
          .pages = kPages,
          .rows = kRows,
          .memory_slots = kMemorySlots,
          .pool_socket = dir / "pool.sock",
          .metrics_port = metrics_port};
}
std::unique_ptr<Child> StartInstance(const strata::testing::PoolInstanceSpec& spec) {
  return std::make_unique<Child>(strata::testing::PoolInstanceArgs(Bin(), spec),
                                 spec.log().string());
}

std::vector<Token> Tokens(uint64_t c) {
  return strata::testing::ConversationTokens(c * 100'000,
                                             kPagesPerConversation * Geometry("tiny").page_tokens);
}

PublishedCheckpoint Checkpoint(uint64_t c) {
  return strata::testing::ConversationCheckpoint(Tokens(c), c + 1, SourceUnits(c));
}

enum class Lookups : unsigned char { kOneStep, kTicket };

// Restores conversation c into its RestoredPage/RestoredRow ids, asking
// again after a lookup that found nothing (a missed grace). With kTicket the
// lookup is begun first (AttachClient::BeginLookup) and every attempt is an
// admission of that ticket: one that went local before the manager's answer
// came is retried once the answer is there (docs/pool.md, "Lookups").
::testing::AssertionResult Restore(AttachClient& client, uint64_t c,
                                   Lookups lookups = Lookups::kOneStep) {
  const InboundTicket ticket =
      strata::testing::ConversationTicket(JobId(100 + c), RestoredUnits(c));
  uint64_t lookup_ticket = 0;
  if (lookups == Lookups::kTicket) {
    Result<uint64_t> begun = client.BeginLookup(Tokens(c), 0, Tokens(c).size());
    if (!begun.ok()) return ::testing::AssertionFailure() << begun.status().ToString();
    lookup_ticket = *begun;
  }
  ::testing::AssertionResult last = ::testing::AssertionFailure();
  for (int attempt = 0; attempt < kLookupAttempts && !last; ++attempt) {
    last = strata::testing::LookupAndRestore(
        client, Tokens(c), ticket, kBound, strata::testing::AwaitRestore::kFetched, lookup_ticket);
  }
  if (lookup_ticket == 0) return last << " (conversation " << c << ")";
  // The rank's store kept the ticket: answered by the manager, admitted,
  // and the pool's endpoint named; ended, it is gone.
  const std::optional<LookupTicketStatus> st =
      strata::testing::AwaitTicketStatus(client, lookup_ticket, kBound);
  if (last && (!st || st->state != LookupTicketState::kReady || st->admissions == 0 ||
               st->pool_consumed == 0)) {
    return ::testing::AssertionFailure()
           << "the ticket's status after its restore: "
           << (st ? "not ready, unadmitted or without a pool hit" : "no answer");
  }
  if (!client.EndLookup(lookup_ticket).ok()) {
    return ::testing::AssertionFailure() << "EndLookup not sent";
  }
  const std::optional<LookupTicketStatus> ended =
      strata::testing::AwaitTicketStatus(client, lookup_ticket, kBound);
  if (!ended || ended->state != LookupTicketState::kNone) {
    return ::testing::AssertionFailure() << "an ended ticket still has a status";
  }
  return last << " (conversation " << c << ")";
}

TEST(PoolInstancesTest, InstancesShareEvictedRecordsThroughTheManager) {
  ASSERT_NE(std::getenv("STRATA_BIN"), nullptr) << "set STRATA_BIN to the strata binary";
  const fs::path dir = fs::temp_directory_path() / ("strata-pool-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::mt19937 rng(std::random_device{}());
  const auto base = static_cast<uint16_t>(10000 + rng() % 20000);

  Child manager({Bin(), "pool", "--name", "process-test", "--socket", (dir / "pool.sock").string(),
                 "--slot-kib", "64", "--slots", "64", "--no-huge-pages", "--metrics-port",
                 std::to_string(base)},
                (dir / "pool.log").string());
  ASSERT_TRUE(strata::testing::WaitForFile(dir / "pool.sock", kBound)) << manager.Log();

  // A stores every conversation; its memory tier evicts the oldest to the pool.
  const auto a_spec = Spec(dir, "a", "tiny", base + 1);
  auto a = StartInstance(a_spec);
  RuntimePlanes a_planes(AllocationsOf(Geometry("tiny").ranks[0]));
  Fill(a_planes);
  auto a_client = strata::testing::AttachRuntime(a_spec, a_planes, kBound);
  ASSERT_TRUE(a_client.ok()) << a_client.status().ToString() << "\n" << a->Log();
  for (uint64_t c = 0; c < kConversations; ++c) {
    ASSERT_TRUE(strata::testing::StoreAndAwait(**a_client, Checkpoint(c), kBound)) << a->Log();
  }

  // B never saw them: conversation 0 comes from the pool, byte-exact.
  const auto b_spec = Spec(dir, "b", "tiny", base + 2);
  auto b = StartInstance(b_spec);
  RuntimePlanes b_planes(AllocationsOf(Geometry("tiny").ranks[0]));
  auto b_client = strata::testing::AttachRuntime(b_spec, b_planes, kBound);
  ASSERT_TRUE(b_client.ok()) << b_client.status().ToString() << "\n" << b->Log();
  EXPECT_NE(Mismatches(b_planes, 0), 0u);  // nothing there yet
  ASSERT_TRUE(Restore(**b_client, 0)) << b->Log() << manager.Log();
  EXPECT_EQ(Mismatches(b_planes, 0), 0u);

  // A exits; what cascaded from it stays pooled.
  EXPECT_TRUE((*a_client)->Close(kBound).ok());
  EXPECT_EQ(a->Stop(), 0) << a->Log();
  // This time through a lookup ticket begun before admission.
  ASSERT_TRUE(Restore(**b_client, 1, Lookups::kTicket)) << b->Log() << manager.Log();
  EXPECT_EQ(Mismatches(b_planes, 1), 0u);

  // Another preset: another layout fingerprint and scope; nothing shared.
  const auto c_spec = Spec(dir, "c", "small-planes", base + 3);
  auto c = StartInstance(c_spec);
  RuntimePlanes c_planes(AllocationsOf(Geometry("small-planes").ranks[0]));
  auto c_client = strata::testing::AttachRuntime(c_spec, c_planes, kBound);
  ASSERT_TRUE(c_client.ok()) << c_client.status().ToString() << "\n" << c->Log();
  EXPECT_FALSE(strata::testing::Finds(**c_client, Tokens(2), kBound)) << c->Log();

  using strata::testing::MetricSample;
  const std::string metrics = strata::testing::HttpGet(base, "/metrics");
  EXPECT_GE(MetricSample(metrics, "strata_pool_claims_total"), 2u) << metrics;
  EXPECT_GE(MetricSample(metrics, "strata_pool_puts_total{stage=\"committed\"}"), 3u) << metrics;
  EXPECT_GE(MetricSample(metrics, "strata_pool_records"), 3u) << metrics;
  EXPECT_NE(strata::testing::HttpGet(base, "/healthz").find("200 OK"), std::string::npos);

  EXPECT_TRUE((*b_client)->Close(kBound).ok());
  EXPECT_TRUE((*c_client)->Close(kBound).ok());
  EXPECT_EQ(b->Stop(), 0) << b->Log();
  EXPECT_EQ(c->Stop(), 0) << c->Log();
  EXPECT_EQ(manager.Stop(), 0) << manager.Log();
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace strata::attach
