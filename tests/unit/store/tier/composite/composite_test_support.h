// A composite store over a real record directory for tests: the directory
// and its scan, one slab pool shared by the memory tier and the staged
// transport, the io_uring disk thread, host-memory transfers for both tiers,
// and a FileSystem double that can fail or hold preallocation (the first
// step of every record write) to inject a full disk, an I/O error, or a
// write that stays in flight.
#pragma once

#include <algorithm>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "store/record/record_scan.h"
#include "store/tier/composite/composite_store.h"
#include "store/tier/staged_transport.h"
#include "store/transfer/host_planes.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata::testing {

inline uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// Fails preallocation with `fail_errno` (0: passes), and, while held, makes
// the disk thread wait in it (bounded) until released.
class FaultFileSystem final : public ForwardingFileSystem {
 public:
  static constexpr std::chrono::seconds kHoldBound{30};

  std::atomic<int> fail_errno{0};
  std::atomic<uint64_t> allocations{0};

  Status Allocate(int fd, uint64_t bytes) override {
    ++allocations;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++waiting_;
      cv_.notify_all();
      cv_.wait_for(lock, kHoldBound, [&] { return !held_; });
      --waiting_;
    }
    if (const int e = fail_errno.load(); e != 0)
      return Status::FromErrno(e, "fallocate (injected)");
    return ForwardingFileSystem::Allocate(fd, bytes);
  }
  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = true;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = false;
    cv_.notify_all();
  }
  // Waits (bounded) until a write is held in preallocation.
  bool WaitUntilHeld(std::chrono::milliseconds bound) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, bound, [&] { return waiting_ > 0 && held_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  int waiting_ = 0;
};

struct RigOptions {
  uint64_t warm_slots = 256;
  uint64_t intake_slots = 16;
  CompositeStoreOptions store;
};

class CompositeRig {
 public:
  CompositeRig(const std::string& base, HostPlanes& planes, FaultFileSystem& fs,
               const RigOptions& o) {
    status = Open(base, planes, fs, o);
  }
  ~CompositeRig() {
    if (store) {
      EXPECT_TRUE(store->Close().ok());
    }
    store.reset();
  }
  CompositeRig(const CompositeRig&) = delete;
  CompositeRig& operator=(const CompositeRig&) = delete;

  Status status;
  std::string path;
  std::unique_ptr<RecordDir> dir;
  std::shared_ptr<SlabPool> pool;
  std::unique_ptr<CompositeStore> store;

 private:
  Status Open(const std::string& base, HostPlanes& planes, FaultFileSystem& fs,
              const RigOptions& o) {
    const CacheGeometry& g = planes.geometry();
    const NamespaceIdentity identity = TestIdentity();
    const LayoutFingerprint fingerprint = ComputeLayoutFingerprint(g);
    path = RecordDirPath(base, identity, fingerprint);
    STRATA_ASSIGN_OR_RETURN(dir, RecordDir::Open(fs, path, RecordDir::Create::kYes));
    STRATA_ASSIGN_OR_RETURN(ScanReport scan, dir->Scan(ExpectationFor(identity, fingerprint, g)));
    STRATA_RETURN_IF_ERROR(dir->RemoveRejected(scan).first_error);
    STRATA_ASSIGN_OR_RETURN(
        std::unique_ptr<SlabPool> p,
        SlabPool::Create(RecordLayout(g).page_record_bytes(), o.warm_slots, o.intake_slots));
    pool = std::move(p);
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<BlockIo> io, OpenUringBlockIo(64));
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DiskThread> thread,
                            DiskThread::Start(fs, std::move(io), dir->fd(), path, {}));
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> staged_transfers, MakeHostTransfers(planes));
    auto transport = std::make_unique<StagedTransport>(
        g, identity, fingerprint, pool, std::move(staged_transfers), std::move(thread));
    transport->Seed(scan);
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> memory_transfers, MakeHostTransfers(planes));
    CompositeStoreOptions so = o.store;
    if (so.disk_limit_bytes == 0) so.disk_limit_bytes = 1ull << 30;
    so.free_bytes = [&fs, fd = dir->fd()] { return fs.FreeBytes(fd); };
    STRATA_ASSIGN_OR_RETURN(store, CompositeStore::Open(g, pool, std::move(memory_transfers),
                                                        std::move(transport), scan.records, so));
    return Status::Ok();
  }
};

// Index entries of the disk tier, shortest first.
inline std::vector<IndexEntry> Entries(const CompositeStore& s) {
  std::vector<IndexEntry> e = s.disk().index().Entries();
  std::sort(e.begin(), e.end(), [](const IndexEntry& a, const IndexEntry& b) {
    return a.key.consumed < b.key.consumed;
  });
  return e;
}

#define OPEN_COMPOSITE(rig, base, planes, fs, options)              \
  CompositeRig rig(base, planes, fs, options);                      \
  if (rig.status.code() == StatusCode::kFailedPrecondition &&       \
      rig.status.message().find("O_DIRECT") != std::string::npos) { \
    GTEST_SKIP() << rig.status.message();                           \
  }                                                                 \
  ASSERT_TRUE(rig.status.ok()) << rig.status.ToString()

}  // namespace strata::testing
