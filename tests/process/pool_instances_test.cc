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
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "launch/presets.h"
#include "store/record/record_layout.h"
#include "tests/support/attach_conversations.h"
#include "tests/support/attach_events.h"
#include "tests/support/child_process.h"
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

// The bytes A publishes for conversation c.
strata::testing::UnitByte Bytes(uint64_t c) {
  return [=](size_t a, uint64_t unit, uint64_t offset) {
    return testing::Pattern(c, a, unit, offset);
  };
}
strata::testing::ConversationUnits SourceUnits(uint64_t c) {
  return strata::testing::NthConversationUnits(c, kPagesPerConversation, 0,
                                               static_cast<uint32_t>(c));
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
std::unique_ptr<Child> StartInstance(const fs::path& dir, const std::string& name,
                                     const std::string& preset, uint16_t metrics_port) {
  const uint64_t memory = kMemorySlots * RecordLayout(Geometry(preset)).page_record_bytes();
  return std::make_unique<Child>(
      std::vector<std::string>{
          Bin(), "rank", "--prefix-cache-memory", std::to_string(memory), "--prefix-cache-pool",
          (dir / "pool.sock").string(), "--prefix-cache-pool-instance", name, "--preset", preset,
          "--pages", std::to_string(kPages), "--rows", std::to_string(kRows), "--metrics-port",
          std::to_string(metrics_port), "--attach-socket", (dir / (name + ".sock")).string()},
      (dir / (name + ".log")).string());
}

Result<std::unique_ptr<AttachClient>> AttachTo(const fs::path& socket, const std::string& preset,
                                               const RuntimePlanes& planes) {
  if (!strata::testing::WaitForFile(socket, kBound)) {
    return Status::Unavailable(socket.string() + " did not appear");
  }
  return AttachClient::Attach({.socket_path = socket.string()},
                              {.runtime_id = "runtime at " + socket.string(),
                               .model_identity = "synthetic/" + preset,
                               .state_mode = StateMode::kOrdinary,
                               .page_tokens = Geometry(preset).page_tokens},
                              planes.Shared());
}

std::vector<Token> Tokens(uint64_t c) {
  return strata::testing::ConversationTokens(c * 100'000,
                                             kPagesPerConversation * Geometry("tiny").page_tokens);
}

PublishedCheckpoint Checkpoint(uint64_t c) {
  return strata::testing::ConversationCheckpoint(Tokens(c), c + 1, SourceUnits(c));
}

// Restores conversation c into its RestoredPage/RestoredRow ids, asking
// again after a lookup that found nothing (a missed grace).
::testing::AssertionResult Restore(AttachClient& client, uint64_t c) {
  const InboundTicket ticket =
      strata::testing::ConversationTicket(JobId(100 + c), RestoredUnits(c));
  ::testing::AssertionResult last = ::testing::AssertionFailure();
  for (int attempt = 0; attempt < kLookupAttempts && !last; ++attempt) {
    last = strata::testing::LookupAndRestore(client, Tokens(c), ticket, kBound,
                                             strata::testing::AwaitRestore::kFetched);
  }
  return last << " (conversation " << c << ")";
}

// Whether a lookup of conversation c over `client` finds anything.
::testing::AssertionResult Finds(AttachClient& client, uint64_t c) {
  const std::vector<Token> tokens = Tokens(c);
  if (!client.Lookup(tokens, 0, tokens.size()).ok()) return ::testing::AssertionFailure();
  std::vector<AttachEvent> events;
  if (!strata::testing::WaitAttachEvents(client, events, kBound,
                                         [](const auto& e) { return !e.empty(); })) {
    return ::testing::AssertionFailure() << "no lookup result";
  }
  const auto* result = std::get_if<LookupResult>(&events[0]);
  return result != nullptr && result->hit ? ::testing::AssertionSuccess()
                                          : ::testing::AssertionFailure();
}

// The body of GET `path` on 127.0.0.1:`port` (empty on any failure).
std::string HttpGet(uint16_t port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
    if (::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n = 0;
      while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

// The value of the sample line starting with `sample` in a /metrics body.
uint64_t Sample(const std::string& metrics, const std::string& sample) {
  const size_t at = metrics.find("\n" + sample + " ");
  if (at == std::string::npos) return ~0ull;
  return std::stoull(metrics.substr(at + sample.size() + 2));
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
  auto a = StartInstance(dir, "a", "tiny", base + 1);
  RuntimePlanes a_planes(AllocationsOf(Geometry("tiny").ranks[0]));
  Fill(a_planes);
  auto a_client = AttachTo(dir / "a.sock", "tiny", a_planes);
  ASSERT_TRUE(a_client.ok()) << a_client.status().ToString() << "\n" << a->Log();
  for (uint64_t c = 0; c < kConversations; ++c) {
    ASSERT_TRUE(strata::testing::StoreAndAwait(**a_client, Checkpoint(c), kBound)) << a->Log();
  }

  // B never saw them: conversation 0 comes from the pool, byte-exact.
  auto b = StartInstance(dir, "b", "tiny", base + 2);
  RuntimePlanes b_planes(AllocationsOf(Geometry("tiny").ranks[0]));
  auto b_client = AttachTo(dir / "b.sock", "tiny", b_planes);
  ASSERT_TRUE(b_client.ok()) << b_client.status().ToString() << "\n" << b->Log();
  EXPECT_NE(Mismatches(b_planes, 0), 0u);  // nothing there yet
  ASSERT_TRUE(Restore(**b_client, 0)) << b->Log() << manager.Log();
  EXPECT_EQ(Mismatches(b_planes, 0), 0u);

  // A exits; what cascaded from it stays pooled.
  EXPECT_TRUE((*a_client)->Close(kBound).ok());
  EXPECT_EQ(a->Stop(), 0) << a->Log();
  ASSERT_TRUE(Restore(**b_client, 1)) << b->Log() << manager.Log();
  EXPECT_EQ(Mismatches(b_planes, 1), 0u);

  // Another preset: another layout fingerprint and scope; nothing shared.
  auto c = StartInstance(dir, "c", "small-planes", base + 3);
  RuntimePlanes c_planes(AllocationsOf(Geometry("small-planes").ranks[0]));
  auto c_client = AttachTo(dir / "c.sock", "small-planes", c_planes);
  ASSERT_TRUE(c_client.ok()) << c_client.status().ToString() << "\n" << c->Log();
  EXPECT_FALSE(Finds(**c_client, 2)) << c->Log();

  const std::string metrics = HttpGet(base, "/metrics");
  EXPECT_GE(Sample(metrics, "strata_pool_claims_total"), 2u) << metrics;
  EXPECT_GE(Sample(metrics, "strata_pool_puts_total{stage=\"committed\"}"), 3u) << metrics;
  EXPECT_GE(Sample(metrics, "strata_pool_records"), 3u) << metrics;
  EXPECT_NE(HttpGet(base, "/healthz").find("200 OK"), std::string::npos);

  EXPECT_TRUE((*b_client)->Close(kBound).ok());
  EXPECT_TRUE((*c_client)->Close(kBound).ok());
  EXPECT_EQ(b->Stop(), 0) << b->Log();
  EXPECT_EQ(c->Stop(), 0) << c->Log();
  EXPECT_EQ(manager.Stop(), 0) << manager.Log();
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace strata::attach
