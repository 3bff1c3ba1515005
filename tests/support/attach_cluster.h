// Shared by the process tests of ranks in separate processes with attached
// runtimes (attach_cluster_test.cc, pool_cluster_test.cc): a job's
// conversations and the bytes every rank publishes for them, a peer rank's
// runtime in a forked process (it shares its memfd planes and answers how
// many restored bytes differ), one `strata rank` process of the job, and the
// record files a rank's directory holds. Every wait is bounded.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/support/attach_conversations.h"
#include "tests/support/attach_events.h"
#include "tests/support/child_process.h"
#include "tests/support/wait_for_file.h"
#include "tests/unit/attach/attach_test_support.h"

namespace strata::attach::testing {

inline constexpr auto kClusterBound = std::chrono::seconds(30);

// A job of `world` ranks of preset "tiny" and its conversations: each of
// `pages_per_conversation` pages and a row, published from page ids
// c * pages_per_conversation and state slot c, restored into page ids from
// 40 and slot 10 + c, every rank's bytes its own.
struct ClusterWorkload {
  uint32_t world = 3;
  uint64_t pages = 64;  // page ids per rank
  uint64_t rows = 16;
  uint64_t pages_per_conversation = 4;
  uint64_t conversations = 3;
  std::string disk_limit = "64MiB";  // every rank's --prefix-cache-disk-limit

  CacheGeometry Geometry() const { return *PresetGeometry("tiny", world, pages, rows); }
  // The bytes conversation c's units hold on `rank`.
  strata::testing::UnitByte Bytes(uint32_t rank, uint64_t c) const {
    return [=](size_t a, uint64_t unit, uint64_t offset) {
      return Pattern(c + 1000 * rank, a, unit, offset);
    };
  }
  strata::testing::ConversationUnits SourceUnits(uint64_t c) const {
    return strata::testing::NthConversationUnits(c, pages_per_conversation, 0,
                                                 static_cast<uint32_t>(c));
  }
  strata::testing::ConversationUnits RestoredUnits(uint64_t c) const {
    return strata::testing::NthConversationUnits(c, pages_per_conversation, 40,
                                                 static_cast<uint32_t>(10 + c));
  }
  void Fill(RuntimePlanes& planes, uint32_t rank) const {
    for (uint64_t c = 0; c < conversations; ++c) {
      strata::testing::FillConversation(planes, SourceUnits(c), Bytes(rank, c));
    }
  }
  // Bytes of conversation c's restored units that differ from what was published.
  uint64_t Mismatches(const RuntimePlanes& planes, uint32_t rank, uint64_t c) const {
    return strata::testing::ConversationMismatches(planes, RestoredUnits(c), Bytes(rank, c));
  }
  AttachIdentity Identity(uint32_t rank) const {
    return {.runtime_id = "runtime of rank " + std::to_string(rank),
            .model_identity = "synthetic/tiny",
            .state_mode = StateMode::kOrdinary,
            .page_tokens = Geometry().page_tokens};
  }
  std::vector<Token> Tokens(uint64_t c) const {
    return strata::testing::ConversationTokens(c * 100'000,
                                               pages_per_conversation * Geometry().page_tokens);
  }
  PublishedCheckpoint Checkpoint(uint64_t c) const {
    return strata::testing::ConversationCheckpoint(Tokens(c), c + 1, SourceUnits(c));
  }
  // Looks conversation c up and restores it into its restored units.
  ::testing::AssertionResult Restore(AttachClient& client, uint64_t c) const {
    const InboundTicket ticket =
        strata::testing::ConversationTicket(JobId(100 + c), RestoredUnits(c));
    return strata::testing::LookupAndRestore(client, Tokens(c), ticket, kClusterBound,
                                             strata::testing::AwaitRestore::kFetched)
           << " (conversation " << c << ")";
  }
};

// Attaches rank `rank`'s runtime once the rank serves its socket.
inline Result<std::unique_ptr<AttachClient>> AttachWithin(const ClusterWorkload& w,
                                                          const std::string& socket, uint32_t rank,
                                                          const RuntimePlanes& planes) {
  if (!strata::testing::WaitForFile(socket, kClusterBound)) {
    return Status::Unavailable(socket + " did not appear");
  }
  return AttachClient::Attach({.socket_path = socket}, w.Identity(rank), planes.Shared());
}

enum class StartPlanes : unsigned char { kPublished, kZeroed };

// A peer rank's runtime in a forked process: fills its planes (kPublished)
// or leaves them zero, attaches, answers 'a', then serves commands on `in`:
// 'c' + conversation (8 bytes) -> mismatches (8 bytes) of that
// conversation's restored units; 's' -> makes a store call (a lookup) and
// answers 'r' once strata closed the channel over it; 'q' -> closes and
// exits 0. Fork it while the test process has no other thread.
class PeerRuntimeProcess {
 public:
  PeerRuntimeProcess(const ClusterWorkload& w, const std::string& socket, uint32_t rank,
                     StartPlanes start) {
    int to[2];
    int from[2];
    if (::pipe(to) != 0 || ::pipe(from) != 0) std::abort();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(to[1]);
      ::close(from[0]);
      ::_exit(Serve(w, socket, rank, start, to[0], from[1]));
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
  PeerRuntimeProcess(const PeerRuntimeProcess&) = delete;
  PeerRuntimeProcess& operator=(const PeerRuntimeProcess&) = delete;

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
  static int Serve(const ClusterWorkload& w, const std::string& socket, uint32_t rank,
                   StartPlanes start, int in, int out) {
    RuntimePlanes planes(AllocationsOf(w.Geometry().ranks[rank]));
    if (start == StartPlanes::kPublished) w.Fill(planes, rank);
    auto client = AttachWithin(w, socket, rank, planes);
    if (!client.ok()) return 20;
    if (::write(out, "a", 1) != 1) return 21;
    while (true) {
      char op = 0;
      if (::read(in, &op, 1) != 1) return 22;
      if (op == 'q') return (*client)->Close(kClusterBound).ok() ? 0 : 23;
      if (op == 'c') {
        uint64_t c = 0;
        if (::read(in, &c, sizeof c) != sizeof c) return 24;
        const uint64_t n = w.Mismatches(planes, rank, c);
        if (::write(out, &n, sizeof n) != sizeof n) return 25;
      }
      if (op == 's') {
        // A peer's channel refuses store calls: strata detaches it.
        const std::vector<Token> tokens(64, 1);
        (void)(*client)->Lookup(tokens, 0, tokens.size());
        std::vector<AttachEvent> events;
        const auto deadline = std::chrono::steady_clock::now() + kClusterBound;
        while ((*client)->Poll(events).ok() && std::chrono::steady_clock::now() < deadline) {
          pollfd p{(*client)->fd(), POLLIN, 0};
          (void)::poll(&p, 1, 50);
        }
        if (::write(out, "r", 1) != 1) return 26;
      }
    }
  }
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

// One `strata rank` process of a job of w.world ranks under `dir`: its
// record directory dir/rankR, attach socket dir/rankR.sock and log
// dir/rankR.log, rendezvous at 127.0.0.1:base_port, metrics at base_port +
// 10 + R; `extra` flags follow.
class RankProcess {
 public:
  RankProcess(const ClusterWorkload& w, const std::filesystem::path& dir, uint32_t rank,
              uint16_t base_port, const std::vector<std::string>& extra = {})
      : socket_((dir / ("rank" + std::to_string(rank) + ".sock")).string()),
        process_(Args(w, dir, rank, base_port, socket_, extra),
                 (dir / ("rank" + std::to_string(rank) + ".log")).string()) {}
  const std::string& socket() const { return socket_; }
  // SIGTERM, then the exit code within the bound (-1: it did not end).
  int Stop() { return process_.Stop(kClusterBound); }
  std::string Log() const { return process_.Log(); }

 private:
  static std::vector<std::string> Args(const ClusterWorkload& w, const std::filesystem::path& dir,
                                       uint32_t rank, uint16_t base_port, const std::string& socket,
                                       const std::vector<std::string>& extra) {
    const std::string r = std::to_string(rank);
    std::vector<std::string> args = {std::getenv("STRATA_BIN"),
                                     "rank",
                                     "--rank",
                                     r,
                                     "--local-rank",
                                     r,
                                     "--world-size",
                                     std::to_string(w.world),
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
                                     w.disk_limit,
                                     "--pages",
                                     std::to_string(w.pages),
                                     "--rows",
                                     std::to_string(w.rows),
                                     "--connect-timeout",
                                     "30s",
                                     "--attach-socket",
                                     socket};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  std::string socket_;
  strata::testing::ChildProcess process_;
};

// Creates `dir` with the job secret every rank reads (mode 0600).
inline void WriteJobSecret(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  {
    std::ofstream secret(dir / "job.secret");
    secret << "attach-cluster-test-secret-0123456789abcdef\n";
  }
  std::filesystem::permissions(
      dir / "job.secret", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

// "name size" of every record file under `dir`.
inline std::set<std::string> RecordFiles(const std::filesystem::path& dir) {
  std::set<std::string> names;
  if (!std::filesystem::exists(dir)) return names;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.path().extension() == ".ckpt") {
      names.insert(e.path().filename().string() + " " + std::to_string(e.file_size()));
    }
  }
  return names;
}

}  // namespace strata::attach::testing
