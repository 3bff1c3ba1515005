// Exports between instances as real processes (issue 22; docs/pool.md,
// "Exports"): a `strata pool` on TCP and two `strata rank` instances (one
// process each, a memory tier large enough that nothing is evicted), both
// forced onto the TCP data channel (--prefix-cache-pool-data tcp, as
// instances on other hosts), each serving a runtime this test process
// attaches over --attach-socket.
//
// Checks: A stores a conversation; the pool holds nothing of it, but A
// announces it as held. B's restore of it goes through an export: the rank
// of A asks its runtime (this test, answering kExportRequested with the
// conversation's page ids and row), copies the chain out of the shared
// planes into the manager's slots window by window, and ends the export
// (kExportEnded, the pin's release); B's claim then lands it byte-exact in
// B's planes. Then the manager is killed while B's claim of another
// conversation waits for A's export: B's fetch fails with nothing written;
// a new manager on the same addresses sees both reconnect on their next
// lookups, A announce its book again, and B restore that conversation
// through an export. Last, A is killed while B's claim of a third waits for
// A's export: B's fetch fails cleanly (kFetchFailed, nothing written) and
// the manager counts the export lost. Every wait is bounded.
//
// Run by ctest with STRATA_BIN set to the `strata` binary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <thread>

#include "tests/support/attach_cluster.h"
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

constexpr uint64_t kPages = 64;
constexpr uint64_t kRows = 16;
constexpr uint64_t kPagesPerConversation = 4;
constexpr uint64_t kMemorySlots = 40;  // nothing is evicted: the pool holds nothing
constexpr int kLookupAttempts = 50;
constexpr uint64_t kConversations = 3;
constexpr auto kBound = 30s;

CacheGeometry Geometry() { return *PresetGeometry("tiny", 1, kPages, kRows); }

strata::testing::UnitByte Bytes(uint64_t c) { return strata::testing::PublishedBytes(c); }
strata::testing::ConversationUnits SourceUnits(uint64_t c) {
  return strata::testing::PublishedUnits(c, kPagesPerConversation);
}
strata::testing::ConversationUnits RestoredUnits(uint64_t c) {
  return strata::testing::NthConversationUnits(c, kPagesPerConversation, 40,
                                               static_cast<uint32_t>(10 + c));
}
std::vector<Token> Tokens(uint64_t c) {
  return strata::testing::ConversationTokens(c * 100'000,
                                             kPagesPerConversation * Geometry().page_tokens);
}
PublishedCheckpoint Checkpoint(uint64_t c) {
  return strata::testing::ConversationCheckpoint(Tokens(c), c + 1, SourceUnits(c));
}
std::string Bin() { return std::getenv("STRATA_BIN"); }

// A's runtime, answering export requests for conversations 0 and 1 on a
// thread of its own until stopped: pins nothing (the test's planes never
// change) and describes the conversation's pages from the requested page.
class ExportAnswerer {
 public:
  explicit ExportAnswerer(AttachClient& client)
      : thread_([this, &client] {
          while (!stop_) {
            std::vector<AttachEvent> events;
            (void)strata::testing::WaitAttachEvents(client, events, 100ms,
                                                    [](const auto& e) { return !e.empty(); });
            for (const AttachEvent& e : events) {
              const auto* s = std::get_if<StoreEvent>(&e);
              if (s == nullptr) continue;
              if (s->kind == StoreEvent::Kind::kExportEnded) ++ended_;
              if (s->kind != StoreEvent::Kind::kExportRequested) continue;
              ++requested_;
              uint64_t c = 0;
              while (c + 1 < kConversations && Checkpoint(c).key != s->key) ++c;
              const strata::testing::ConversationUnits u = SourceUnits(c);
              ExportDescription d{
                  .start_page = s->start_page, .pages = {}, .row_slot = StateSlot(u.row)};
              for (uint64_t p = s->start_page; p < u.pages; ++p) {
                d.pages.emplace_back(static_cast<uint32_t>(u.first_page + p));
              }
              (void)client.ExportPinned(s->export_id, d);
            }
          }
        }) {}
  ~ExportAnswerer() {
    stop_ = true;
    thread_.join();
  }
  uint64_t requested() const { return requested_; }
  uint64_t ended() const { return ended_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> requested_{0};
  std::atomic<uint64_t> ended_{0};
  std::thread thread_;
};

// Looks conversation c up over `client` and restores it into its restored
// ids, asking again after a lookup that found nothing (a missed grace).
::testing::AssertionResult Restore(AttachClient& client, uint64_t c) {
  const InboundTicket ticket =
      strata::testing::ConversationTicket(JobId(100 + c), RestoredUnits(c));
  ::testing::AssertionResult last = ::testing::AssertionFailure();
  for (int attempt = 0; attempt < kLookupAttempts && !last; ++attempt) {
    last = strata::testing::LookupAndRestore(client, Tokens(c), ticket, kBound,
                                             strata::testing::AwaitRestore::kFetched);
    if (!last && std::string(last.message()).find("not found") == std::string::npos) break;
  }
  return last << " (conversation " << c << ")";
}

TEST(PoolExportsProcessTest, BRestoresWhatOnlyAsPlanesHoldAndFailsCleanlyWhenAGoesMidExport) {
  ASSERT_NE(std::getenv("STRATA_BIN"), nullptr) << "set STRATA_BIN to the strata binary";
  const fs::path dir =
      fs::temp_directory_path() / ("strata-pool-exports-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::mt19937 rng(std::random_device{}());
  const auto base = static_cast<uint16_t>(10000 + rng() % 20000);
  testing::WriteJobSecret(dir);
  const std::string tcp = "127.0.0.1:" + std::to_string(base + 60);
  const auto start_manager = [&] {
    return std::make_unique<strata::testing::ChildProcess>(
        std::vector<std::string>{Bin(), "pool", "--name", "exports-test", "--socket",
                                 (dir / "pool.sock").string(), "--slot-kib", "64", "--slots", "64",
                                 "--no-huge-pages", "--metrics-port", std::to_string(base), "--tcp",
                                 tcp, "--job-secret-file", (dir / "job.secret").string()},
        (dir / "pool.log").string());
  };
  auto manager = start_manager();
  ASSERT_TRUE(strata::testing::WaitForFile(dir / "pool.sock", kBound)) << manager->Log();

  const auto spec = [&](const std::string& name, uint16_t port) {
    return strata::testing::PoolInstanceSpec{.dir = dir,
                                             .name = name,
                                             .preset = "tiny",
                                             .pages = kPages,
                                             .rows = kRows,
                                             .memory_slots = kMemorySlots,
                                             .pool_socket = "tcp://" + tcp,
                                             .metrics_port = port};
  };
  const auto start = [&](const strata::testing::PoolInstanceSpec& s) {
    std::vector<std::string> args = strata::testing::PoolInstanceArgs(Bin(), s);
    args.insert(args.end(), {"--prefix-cache-pool-data", "tcp", "--job-secret-file",
                             (dir / "job.secret").string()});
    return std::make_unique<strata::testing::ChildProcess>(args, s.log().string());
  };
  const auto a_spec = spec("a", base + 1);
  const auto b_spec = spec("b", base + 2);
  auto a = start(a_spec);
  auto b = start(b_spec);
  RuntimePlanes a_planes(AllocationsOf(Geometry().ranks[0]));
  RuntimePlanes b_planes(AllocationsOf(Geometry().ranks[0]));
  for (uint64_t c = 0; c < kConversations; ++c) {
    strata::testing::FillConversation(a_planes, SourceUnits(c), Bytes(c));
  }
  auto a_client = strata::testing::AttachRuntime(a_spec, a_planes, kBound);
  ASSERT_TRUE(a_client.ok()) << a_client.status().ToString() << "\n" << a->Log();
  auto b_client = strata::testing::AttachRuntime(b_spec, b_planes, kBound);
  ASSERT_TRUE(b_client.ok()) << b_client.status().ToString() << "\n" << b->Log();

  // A stores conversation 0: its memory tier keeps it, the pool gets nothing.
  ASSERT_TRUE(strata::testing::StoreAndAwait(**a_client, Checkpoint(0), kBound)) << a->Log();
  ASSERT_TRUE(strata::testing::SampleAtLeast(base, "strata_pool_holdings", 1, kBound))
      << manager->Log();
  EXPECT_EQ(strata::testing::ScrapeSample(base, "strata_pool_records"), 0u);

  {
    ExportAnswerer answering(**a_client);
    ASSERT_TRUE(Restore(**b_client, 0)) << b->Log() << a->Log() << manager->Log();
    EXPECT_EQ(strata::testing::ConversationMismatches(b_planes, RestoredUnits(0), Bytes(0)), 0u);
    const auto deadline = std::chrono::steady_clock::now() + kBound;
    while (answering.ended() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(answering.requested(), 1u);
    EXPECT_EQ(answering.ended(), 1u) << "the pin's one release";
  }
  using strata::testing::ScrapeSample;
  EXPECT_TRUE(strata::testing::SampleAtLeast(base, "strata_pool_exports_total{outcome=\"relayed\"}",
                                             1, kBound));
  EXPECT_GT(ScrapeSample(base, "strata_pool_data_bytes_total{direction=\"in\"}"), 0u)
      << "A's export moved through its data connection";
  EXPECT_EQ(ScrapeSample(base, "strata_pool_records"), 1u) << "the exported record stays pooled";

  // The bytes of B's units for conversation c.
  const auto restored_bytes = [&](uint64_t c) {
    std::vector<uint8_t> bytes;
    strata::testing::ForEachConversationUnit(
        b_planes, RestoredUnits(c), [&](size_t a_index, uint64_t, const uint8_t* unit) {
          bytes.insert(bytes.end(), unit, unit + b_planes.allocations[a_index].unit_bytes);
        });
    return bytes;
  };
  // Restores conversation c in B while `kill` ends a process as soon as the
  // manager asked A for the export (the `started`-th): the fetch must fail
  // with nothing written.
  const auto restore_while = [&](uint64_t c, uint64_t started, const std::function<void()>& kill) {
    const std::vector<uint8_t> before = restored_bytes(c);
    std::thread killer([&] {
      (void)strata::testing::SampleAtLeast(base, "strata_pool_exports_total{outcome=\"started\"}",
                                           started, kBound);
      kill();
    });
    const ::testing::AssertionResult lost = Restore(**b_client, c);
    killer.join();
    EXPECT_FALSE(lost) << "B's claim of conversation " << c << " must fail";
    EXPECT_NE(std::string(lost.message()).find("the fetch failed"), std::string::npos)
        << lost.message();
    EXPECT_EQ(restored_bytes(c), before) << "nothing was written into B's planes";
  };

  // The manager goes while B's claim of conversation 1 waits for A's export.
  ASSERT_TRUE(strata::testing::StoreAndAwait(**a_client, Checkpoint(1), kBound)) << a->Log();
  ASSERT_TRUE(strata::testing::SampleAtLeast(base, "strata_pool_holdings", 2, kBound));
  restore_while(1, 2, [&] { (void)manager->Kill(kBound); });
  manager = start_manager();  // the same addresses, an empty pool
  ASSERT_TRUE(strata::testing::SampleAtLeast(base, "strata_pool_sessions", 0, kBound))
      << manager->Log();
  // Each instance reconnects on its next lookup after the reconnect
  // interval; A's new session starts with its whole book.
  std::this_thread::sleep_for(1100ms);
  (void)strata::testing::Finds(**a_client, Tokens(0), kBound);
  ASSERT_TRUE(strata::testing::SampleAtLeast(base, "strata_pool_holdings", 2, kBound))
      << a->Log() << manager->Log();
  {
    ExportAnswerer answering(**a_client);
    ASSERT_TRUE(Restore(**b_client, 1)) << b->Log() << a->Log() << manager->Log();
    EXPECT_EQ(strata::testing::ConversationMismatches(b_planes, RestoredUnits(1), Bytes(1)), 0u);
  }
  EXPECT_TRUE(strata::testing::SampleAtLeast(base, "strata_pool_exports_total{outcome=\"relayed\"}",
                                             1, kBound));

  // A goes while B's claim of conversation 2 waits for A's export.
  ASSERT_TRUE(strata::testing::StoreAndAwait(**a_client, Checkpoint(2), kBound)) << a->Log();
  ASSERT_TRUE(strata::testing::SampleAtLeast(base, "strata_pool_holdings", 3, kBound));
  restore_while(2, 2, [&] { (void)a->Kill(kBound); });
  EXPECT_TRUE(strata::testing::SampleAtLeast(base, "strata_pool_exports_total{outcome=\"lost\"}", 1,
                                             kBound));

  EXPECT_TRUE((*b_client)->Close(kBound).ok());
  EXPECT_EQ(b->Stop(kBound), 0) << b->Log();
  EXPECT_EQ(manager->Stop(kBound), 0) << manager->Log();
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace strata::attach
