// LocalDisk: everything one process needs to run record jobs on its own
// record directory — the locked directory and its startup scan, the slab pool
// used for staging (and, in a composite, for warm retention), the disk thread
// and the staged transport over this process's ranks. A rank agent runs jobs
// on it directly; a DiskStore runs on top of its transport.
//
// Destruction order matters: whatever holds the transport (a DiskStore) must
// be destroyed before the LocalDisk that owns the directory and pool.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "store/io/block_io.h"
#include "store/io/file_system.h"
#include "store/record/fingerprint.h"
#include "store/record/geometry.h"
#include "store/record/record_dir.h"
#include "store/record/record_file.h"
#include "store/record/record_scan.h"
#include "store/tier/direct_transport.h"
#include "store/tier/staged_transport.h"
#include "store/transfer/slab_pool.h"

namespace strata {

struct LocalDiskOptions {
  std::string base_dir;     // the namespace directory is created below it
  uint64_t warm_slots = 0;  // retention slots for a memory tier sharing the pool
  uint64_t max_active = 4;  // concurrent requests, for intake sizing
  uint64_t host_headroom_bytes = uint64_t{8} << 30;  // what intake may take
  // kSync (the default): a record is acknowledged only once its file is
  // fdatasync'ed and its directory fsync'ed. kNone only where chosen by name
  // (benchmarks, tests that do not care about power loss).
  Durability durability = Durability::kSync;
  HostRegistrar* registrar = nullptr;  // CUDA host registration; not owned
  DiskThreadOptions disk_thread;       // queue bounds and scheduling (nice 10 by default)
  // Fault-injection seam (tests): the filesystem every record call goes
  // through instead of the real one (not owned; must outlive the LocalDisk),
  // and a wrapper around the io_uring BlockIo the disk thread gets. Unset:
  // the production path.
  FileSystem* file_system = nullptr;
  std::function<std::unique_ptr<BlockIo>(std::unique_ptr<BlockIo>)> wrap_block_io;
};

class LocalDisk {
 public:
  // Creates and locks "<base>/<identity prefix>-<fingerprint>", scans it,
  // removes temporary, bad and orphaned files, sizes intake, maps the pool
  // and starts the disk thread. Fails when another process owns the
  // directory or the filesystem refuses O_DIRECT.
  static Result<std::unique_ptr<LocalDisk>> Open(const CacheGeometry& geometry,
                                                 const NamespaceIdentity& identity,
                                                 const LayoutFingerprint& fingerprint,
                                                 const LocalDiskOptions& options);
  ~LocalDisk();

  // The staged transport over `transfers` (this process's ranks); once.
  Result<std::unique_ptr<StagedTransport>> MakeTransport(std::unique_ptr<Transfers> transfers,
                                                         StagedOptions options = {});

  // The direct transport (seed 2.6) over `planes` (one RankPlanes per rank
  // per job, addresses `io` and `checksums` accept), on this record directory, with
  // its durability, seeded with the startup scan. The directory and the
  // filesystem must outlive it.
  std::unique_ptr<DirectTransport> MakeDirectTransport(
      std::shared_ptr<const PlaneBaseSource> planes, std::unique_ptr<DirectFileIo> io,
      std::unique_ptr<DeviceRecordChecksums> checksums, DirectOptions options = {});

  const std::string& path() const { return dir_->path(); }
  const ScanReport& scan() const { return scan_; }
  const RecordDir::Cleanup& cleanup() const { return cleanup_; }
  const IntakePlan& intake() const { return intake_; }
  std::shared_ptr<SlabPool> pool() const { return pool_; }
  FileSystem& fs() { return *fs_; }
  RecordDir& dir() { return *dir_; }
  // Free bytes of the filesystem holding the record directory
  // (DiskStoreOptions::free_bytes).
  Result<uint64_t> FreeBytes() { return fs_->FreeBytes(dir_->fd()); }
  // Re-scans after the caller changed files (e.g. applied an agreement).
  Status Rescan();

 private:
  LocalDisk() = default;
  CacheGeometry geometry_;
  NamespaceIdentity identity_{};
  LayoutFingerprint fingerprint_{};
  LocalDiskOptions options_;
  PosixFileSystem posix_fs_;
  FileSystem* fs_ = &posix_fs_;  // posix_fs_ or options_.file_system
  std::unique_ptr<RecordDir> dir_;
  ScanReport scan_;
  RecordDir::Cleanup cleanup_;
  IntakePlan intake_;
  std::shared_ptr<SlabPool> pool_;
  std::unique_ptr<DiskThread> disk_;
  // Shared by every transport made here, seeded with the scan.
  std::shared_ptr<RowChecksums> row_checksums_ = std::make_shared<RowChecksums>();
};

// Makes the transport a rank's record jobs run on, over its opened
// LocalDisk and the transfers of its planes: a process that may run the
// direct transport supplies one (launch/rank/); empty means
// disk.MakeTransport(transfers, staged).
using DiskTransportFactory = std::function<Result<std::unique_ptr<DiskTransport>>(
    LocalDisk& disk, std::unique_ptr<Transfers> transfers, const StagedOptions& staged)>;

// `factory`'s transport, or the staged one when it is empty.
Result<std::unique_ptr<DiskTransport>> MakeRankTransport(const DiskTransportFactory& factory,
                                                         LocalDisk& disk,
                                                         std::unique_ptr<Transfers> transfers,
                                                         const StagedOptions& staged);

}  // namespace strata
