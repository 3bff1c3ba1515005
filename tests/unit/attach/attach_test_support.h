// Shared by the attach tests: a runtime's allocations for a geometry, memfd
// planes filled with a pattern, and a `strata rank`-like server in a forked
// process (a MemoryStore over ImportedPlanes behind an AttachServer).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "attach/attach_server.h"
#include "attach/client/attach_client.h"
#include "attach/client/memfd_region.h"
#include "launch/presets.h"
#include "store/record/record_layout.h"
#include "store/tier/memory_store.h"

namespace strata::attach::testing {

inline constexpr char kModel[] = "test/tiny";

inline CacheGeometry TinyGeometry() { return *PresetGeometry("tiny", 1, 64, 16); }

inline AttachExpectation Expectation() {
  return {.model_identity = kModel, .state_mode = StateMode::kOrdinary, .geometry = TinyGeometry()};
}

inline std::vector<SizedAllocation> AllocationsOf(const RankGeometry& g) {
  std::vector<SizedAllocation> out;
  for (const PlaneSpec& p : g.page_planes) {
    out.push_back({p.name, AllocationGroup::kKvPages, p.unit_bytes, g.page_count});
  }
  out.push_back({g.row.name, AllocationGroup::kStateRows, g.row.unit_bytes, g.row_count});
  return out;
}

inline AttachHello HelloFor(const CacheGeometry& g) {
  AttachHello h;
  h.runtime_id = "test-runtime";
  h.model_identity = kModel;
  h.page_tokens = g.page_tokens;
  for (const RankGeometry& r : g.ranks) h.ranks.push_back(AllocationsOf(r));
  return h;
}

// One rank's planes in memfd regions, in AllocationsOf order.
struct RuntimePlanes {
  explicit RuntimePlanes(std::vector<SizedAllocation> a) : allocations(std::move(a)) {
    for (const SizedAllocation& s : allocations) {
      regions.push_back(*MemfdRegion::Create(s.name, s.unit_bytes * s.count));
    }
  }
  std::vector<std::vector<SharedAllocation>> Shared() const {
    std::vector<SharedAllocation> rank;
    for (size_t i = 0; i < allocations.size(); ++i)
      rank.push_back({allocations[i], regions[i]->fd()});
    return {rank};
  }
  uint8_t* Unit(size_t allocation, uint64_t index) const {
    return regions[allocation]->data() + index * allocations[allocation].unit_bytes;
  }
  std::vector<SizedAllocation> allocations;
  std::vector<std::unique_ptr<MemfdRegion>> regions;
};

// The byte a published unit holds: from (conversation, allocation, unit index, offset).
inline uint8_t Pattern(uint64_t conversation, size_t allocation, uint64_t unit, uint64_t offset) {
  return static_cast<uint8_t>((conversation * 131 + allocation * 31 + unit * 7 + offset * 13) ^
                              (offset >> 8));
}

// A server process: forked before the test process starts any thread; it
// serves until SIGTERM, then closes the store and exits 0 (nonzero on a
// startup failure).
class ServerProcess {
 public:
  explicit ServerProcess(AttachServerOptions options) : socket_path_(options.socket_path) {
    int ready[2];
    if (::pipe(ready) != 0) std::abort();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      ::_exit(Serve(std::move(options), ready[1]));
    }
    ::close(ready[1]);
    char byte = 0;
    ready_ = ::read(ready[0], &byte, 1) == 1 && byte == 'r';
    ::close(ready[0]);
  }
  ~ServerProcess() { (void)Stop(); }

  bool ready() const { return ready_; }
  // SIGTERM, then the exit status (0: the store closed cleanly).
  int Stop() {
    if (pid_ <= 0) return exit_code_;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exit_code_;
  }

 private:
  static inline volatile std::sig_atomic_t stop_ = 0;

  static int Serve(AttachServerOptions options, int ready_fd) {
    std::signal(SIGTERM, [](int) { stop_ = 1; });
    const CacheGeometry g = options.expected.geometry;
    auto planes = ImportedPlanes::Reserve(g);
    if (!planes.ok()) return 10;
    auto pool = SlabPool::Create(RecordLayout(g).page_record_bytes(), 256, 0);
    if (!pool.ok()) return 11;
    auto transfers = MakeHostTransfers(**planes);
    if (!transfers.ok()) return 12;
    MemoryStore store(g, std::shared_ptr<SlabPool>(std::move(*pool)), std::move(*transfers));
    auto server = AttachServer::Listen(options, {.store = &store, .planes = planes->get()});
    if (!server.ok()) return 13;
    if (::write(ready_fd, "r", 1) != 1) return 14;
    const auto start = std::chrono::steady_clock::now();
    while (stop_ == 0) {
      const auto now_ms =
          static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now() - start)
                                    .count());
      (*server)->Step(now_ms, std::chrono::milliseconds(20));
    }
    return store.Close().ok() ? 0 : 15;
  }

  std::string socket_path_;
  pid_t pid_ = -1;
  bool ready_ = false;
  int exit_code_ = -1;
};

// A fresh directory for the socket.
inline std::string TempSocketPath() {
  char dir[] = "/tmp/strata-attach-XXXXXX";
  if (::mkdtemp(dir) == nullptr) std::abort();
  return std::string(dir) + "/rank.sock";
}

}  // namespace strata::attach::testing
