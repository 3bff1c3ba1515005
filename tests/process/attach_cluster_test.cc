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
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

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

constexpr uint32_t kWorld = 3;
constexpr uint64_t kPages = 64;  // page ids per rank
constexpr uint64_t kRows = 16;
constexpr uint64_t kPagesPerConversation = 4;
constexpr uint64_t kConversations = 3;
constexpr auto kBound = 30s;

CacheGeometry Geometry() { return *PresetGeometry("tiny", kWorld, kPages, kRows); }

// The bytes conversation c's units hold on `rank`.
strata::testing::UnitByte Bytes(uint32_t rank, uint64_t c) {
  return [=](size_t a, uint64_t unit, uint64_t offset) {
    return testing::Pattern(c + 1000 * rank, a, unit, offset);
  };
}

// Where conversation c's pages and row live when published, and where a
// restore puts them (other ids and another slot).
strata::testing::ConversationUnits SourceUnits(uint64_t c) {
  return strata::testing::NthConversationUnits(c, kPagesPerConversation, 0,
                                               static_cast<uint32_t>(c));
}
strata::testing::ConversationUnits RestoredUnits(uint64_t c) {
  return strata::testing::NthConversationUnits(c, kPagesPerConversation, 40,
                                               static_cast<uint32_t>(10 + c));
}

void Fill(RuntimePlanes& planes, uint32_t rank) {
  for (uint64_t c = 0; c < kConversations; ++c) {
    strata::testing::FillConversation(planes, SourceUnits(c), Bytes(rank, c));
  }
}

// Bytes of conversation c's restored units that differ from what was published.
uint64_t Mismatches(const RuntimePlanes& planes, uint32_t rank, uint64_t c) {
  return strata::testing::ConversationMismatches(planes, RestoredUnits(c), Bytes(rank, c));
}

AttachIdentity Identity(uint32_t rank) {
  return {.runtime_id = "runtime of rank " + std::to_string(rank),
          .model_identity = "synthetic/tiny",
          .state_mode = StateMode::kOrdinary,
          .page_tokens = Geometry().page_tokens};
}

// Attaches once the rank serves its socket.
Result<std::unique_ptr<AttachClient>> AttachWithin(const std::string& socket, uint32_t rank,
                                                   const RuntimePlanes& planes) {
  if (!strata::testing::WaitForFile(socket, kBound))
    return Status::Unavailable(socket + " did not appear");
  return AttachClient::Attach({.socket_path = socket}, Identity(rank), planes.Shared());
}

enum class StartPlanes : unsigned char { kPublished, kZeroed };

// A peer's runtime process: fills its planes (kPublished) or leaves them
// zero, attaches, answers 'a', then serves commands on `in`: 'c' +
// conversation (8 bytes) -> mismatches (8 bytes) of that conversation's
// restored units; 's' -> makes a store call (a lookup) and answers 'r' once
// strata closed the channel over it; 'q' -> closes and exits 0.
int PeerRuntime(const std::string& socket, uint32_t rank, StartPlanes start, int in, int out) {
  RuntimePlanes planes(AllocationsOf(Geometry().ranks[rank]));
  if (start == StartPlanes::kPublished) Fill(planes, rank);
  auto client = AttachWithin(socket, rank, planes);
  if (!client.ok()) return 20;
  if (::write(out, "a", 1) != 1) return 21;
  while (true) {
    char op = 0;
    if (::read(in, &op, 1) != 1) return 22;
    if (op == 'q') return (*client)->Close(kBound).ok() ? 0 : 23;
    if (op == 'c') {
      uint64_t c = 0;
      if (::read(in, &c, sizeof c) != sizeof c) return 24;
      const uint64_t n = Mismatches(planes, rank, c);
      if (::write(out, &n, sizeof n) != sizeof n) return 25;
    }
    if (op == 's') {
      // A peer's channel refuses store calls: strata detaches it.
      const std::vector<Token> tokens(64, 1);
      (void)(*client)->Lookup(tokens, 0, tokens.size());
      std::vector<AttachEvent> events;
      const auto deadline = std::chrono::steady_clock::now() + kBound;
      while ((*client)->Poll(events).ok() && std::chrono::steady_clock::now() < deadline) {
        pollfd p{(*client)->fd(), POLLIN, 0};
        (void)::poll(&p, 1, 50);
      }
      if (::write(out, "r", 1) != 1) return 26;
    }
  }
}

class PeerRuntimeProcess {
 public:
  PeerRuntimeProcess(const std::string& socket, uint32_t rank, StartPlanes start) {
    int to[2];
    int from[2];
    if (::pipe(to) != 0 || ::pipe(from) != 0) std::abort();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(to[1]);
      ::close(from[0]);
      ::_exit(PeerRuntime(socket, rank, start, to[0], from[1]));
    }
    ::close(to[0]);
    ::close(from[1]);
    in_ = to[1];
    out_ = from[0];
    char byte = 0;
    attached_ = ::read(out_, &byte, 1) == 1 && byte == 'a';
  }
  ~PeerRuntimeProcess() {
    Kill();
    ::close(in_);
    ::close(out_);
  }
  bool attached() const { return attached_; }
  uint64_t Mismatches(uint64_t c) {
    uint64_t n = ~0ull;
    if (::write(in_, "c", 1) != 1 || ::write(in_, &c, sizeof c) != sizeof c) return n;
    return ::read(out_, &n, sizeof n) == sizeof n ? n : ~0ull;
  }
  bool StoreIsRefused() {
    char byte = 0;
    return ::write(in_, "s", 1) == 1 && ::read(out_, &byte, 1) == 1 && byte == 'r';
  }
  int Quit() {
    if (::write(in_, "q", 1) != 1) return -1;
    return Wait();
  }
  void Kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    (void)Wait();
  }

 private:
  int Wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  bool attached_ = false;
};

// One `strata rank` process of the job.
class RankProcess {
 public:
  RankProcess(const fs::path& dir, uint32_t rank, uint16_t base_port)
      : socket_((dir / ("rank" + std::to_string(rank) + ".sock")).string()),
        process_(Args(dir, rank, base_port, socket_),
                 (dir / ("rank" + std::to_string(rank) + ".log")).string()) {}
  const std::string& socket() const { return socket_; }
  // SIGTERM, then the exit code within the bound (-1: it did not end).
  int Stop() { return process_.Stop(kBound); }
  std::string Log() const { return process_.Log(); }

 private:
  static std::vector<std::string> Args(const fs::path& dir, uint32_t rank, uint16_t base_port,
                                       const std::string& socket) {
    const std::string r = std::to_string(rank);
    return {std::getenv("STRATA_BIN"),
            "rank",
            "--rank",
            r,
            "--local-rank",
            r,
            "--world-size",
            std::to_string(kWorld),
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            std::to_string(base_port),
            "--metrics-port",
            std::to_string(base_port + 10),
            "--job-secret-file",
            (dir / "job.secret").string(),
            "--prefix-cache-disk",
            (dir / ("rank" + r)).string(),
            "--prefix-cache-disk-limit",
            "64MiB",
            "--pages",
            std::to_string(kPages),
            "--rows",
            std::to_string(kRows),
            "--connect-timeout",
            "30s",
            "--attach-socket",
            socket};
  }

  std::string socket_;
  strata::testing::ChildProcess process_;
};

std::set<std::string> RecordFiles(const fs::path& dir) {
  std::set<std::string> names;
  if (!fs::exists(dir)) return names;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().extension() == ".ckpt") {
      names.insert(e.path().filename().string() + " " + std::to_string(e.file_size()));
    }
  }
  return names;
}

template <typename Done>
bool WaitEvents(AttachClient& client, std::vector<AttachEvent>& events, Done done) {
  return strata::testing::WaitAttachEvents(client, events, kBound, done);
}

size_t Count(const std::vector<AttachEvent>& events, StoreEvent::Kind kind) {
  return strata::testing::CountStoreEvents(events, kind);
}

std::vector<Token> Tokens(uint64_t c) {
  return strata::testing::ConversationTokens(c * 100'000,
                                             kPagesPerConversation * Geometry().page_tokens);
}

PublishedCheckpoint Checkpoint(uint64_t c) {
  return strata::testing::ConversationCheckpoint(Tokens(c), c + 1, SourceUnits(c));
}

// Looks conversation c up and restores it into its RestoredPage/RestoredRow ids.
::testing::AssertionResult Restore(AttachClient& client, uint64_t c) {
  const InboundTicket ticket =
      strata::testing::ConversationTicket(JobId(100 + c), RestoredUnits(c));
  return strata::testing::LookupAndRestore(client, Tokens(c), ticket, kBound,
                                           strata::testing::AwaitRestore::kFetched)
         << " (conversation " << c << ")";
}

TEST(AttachClusterTest, PeersShareTheirPlanesAndEveryRankRestoresByteExact) {
  ASSERT_NE(std::getenv("STRATA_BIN"), nullptr) << "set STRATA_BIN to the strata binary";
  const fs::path dir =
      fs::temp_directory_path() / ("strata-attach-cluster-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream secret(dir / "job.secret");
    secret << "attach-cluster-test-secret-0123456789abcdef\n";
  }
  fs::permissions(dir / "job.secret", fs::perms::owner_read | fs::perms::owner_write);
  std::mt19937 rng(std::random_device{}());
  const auto base = static_cast<uint16_t>(10000 + rng() % 20000);

  // Every process is forked from this single-threaded test process.
  std::vector<std::unique_ptr<RankProcess>> ranks;
  for (uint32_t r = 0; r < kWorld; ++r)
    ranks.push_back(std::make_unique<RankProcess>(dir, r, base));
  std::vector<std::unique_ptr<PeerRuntimeProcess>> peers;
  for (uint32_t r = 1; r < kWorld; ++r) {
    peers.push_back(
        std::make_unique<PeerRuntimeProcess>(ranks[r]->socket(), r, StartPlanes::kPublished));
    ASSERT_TRUE(peers.back()->attached()) << ranks[r]->Log();
  }
  RuntimePlanes planes(AllocationsOf(Geometry().ranks[0]));
  Fill(planes, 0);
  auto client = AttachWithin(ranks[0]->socket(), 0, planes);
  ASSERT_TRUE(client.ok()) << client.status().ToString() << "\n" << ranks[0]->Log();

  for (uint64_t c = 0; c < kConversations; ++c) ASSERT_TRUE((*client)->Store(Checkpoint(c)).ok());
  std::vector<AttachEvent> events;
  ASSERT_TRUE(WaitEvents(**client, events, [](const auto& e) {
    return Count(e, StoreEvent::Kind::kStored) + Count(e, StoreEvent::Kind::kStoreFailed) ==
           kConversations;
  })) << ranks[0]->Log();
  ASSERT_EQ(Count(events, StoreEvent::Kind::kStored), kConversations) << ranks[0]->Log();
  const std::set<std::string> zero = RecordFiles(dir / "rank0");
  EXPECT_EQ(zero.size(), kConversations);
  for (uint32_t r = 1; r < kWorld; ++r)
    EXPECT_EQ(RecordFiles(dir / ("rank" + std::to_string(r))), zero);

  for (uint64_t c = 0; c < kConversations; ++c) {
    ASSERT_TRUE(Restore(**client, c)) << ranks[0]->Log();
    EXPECT_EQ(Mismatches(planes, 0, c), 0u) << "rank 0, conversation " << c;
    for (uint32_t r = 1; r < kWorld; ++r) {
      EXPECT_EQ(peers[r - 1]->Mismatches(c), 0u) << "rank " << r << ", conversation " << c;
    }
  }

  // Rank 2's runtime dies and restarts with fresh planes; the next restore
  // reaches its new planes.
  peers[1]->Kill();
  peers[1] = std::make_unique<PeerRuntimeProcess>(ranks[2]->socket(), 2, StartPlanes::kZeroed);
  ASSERT_TRUE(peers[1]->attached()) << ranks[2]->Log();
  EXPECT_NE(peers[1]->Mismatches(0), 0u);  // zeroed: nothing restored there yet
  ASSERT_TRUE(Restore(**client, 0)) << ranks[0]->Log();
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
