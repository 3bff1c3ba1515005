#include "store/tier/local_disk.h"

#include <filesystem>

#include "store/io/uring_block_io.h"

namespace strata {

namespace {
constexpr uint32_t kRingCapacity = 64;
}

Result<std::unique_ptr<LocalDisk>> LocalDisk::Open(const CacheGeometry& geometry,
                                                   const NamespaceIdentity& identity,
                                                   const LayoutFingerprint& fingerprint,
                                                   const LocalDiskOptions& options) {
  STRATA_RETURN_IF_ERROR(ValidateGeometry(geometry));
  std::unique_ptr<LocalDisk> d(new LocalDisk());
  d->geometry_ = geometry;
  d->identity_ = identity;
  d->fingerprint_ = fingerprint;
  d->options_ = options;
  if (options.file_system != nullptr) d->fs_ = options.file_system;
  std::error_code ec;
  std::filesystem::create_directories(options.base_dir, ec);
  if (ec) {
    return Status::IoError("cannot create record base directory '" + options.base_dir +
                           "': " + ec.message());
  }
  const std::string path = RecordDirPath(options.base_dir, identity, fingerprint);
  STRATA_ASSIGN_OR_RETURN(d->dir_, RecordDir::Open(*d->fs_, path, RecordDir::Create::kYes));
  STRATA_RETURN_IF_ERROR(d->Rescan());
  RecordLayout layout(geometry);
  const uint64_t slot_bytes = layout.page_record_bytes();
  const uint64_t row_slots = RowSlots(layout.row_segment_bytes(), slot_bytes);
  d->intake_ = PlanIntake(options.max_active, row_slots, slot_bytes, options.host_headroom_bytes);
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<SlabPool> pool,
      SlabPool::Create(slot_bytes, options.warm_slots, d->intake_.slots, options.registrar));
  d->pool_ = std::move(pool);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<BlockIo> io, OpenUringBlockIo(kRingCapacity));
  if (options.wrap_block_io) io = options.wrap_block_io(std::move(io));
  STRATA_ASSIGN_OR_RETURN(d->disk_, DiskThread::Start(*d->fs_, std::move(io), d->dir_->fd(), path,
                                                      options.disk_thread));
  return d;
}

LocalDisk::~LocalDisk() = default;

Status LocalDisk::Rescan() {
  STRATA_ASSIGN_OR_RETURN(scan_, dir_->Scan(ExpectationFor(identity_, fingerprint_, geometry_)));
  cleanup_ = dir_->RemoveRejected(scan_);
  return cleanup_.first_error;
}

Result<std::unique_ptr<StagedTransport>> LocalDisk::MakeTransport(
    std::unique_ptr<Transfers> transfers, StagedOptions options) {
  if (!disk_) return Status::FailedPrecondition("the staged transport was already made");
  options.durability = options_.durability;
  options.row_checksums = row_checksums_;
  auto t = std::make_unique<StagedTransport>(geometry_, identity_, fingerprint_, pool_,
                                             std::move(transfers), std::move(disk_), options);
  t->Seed(scan_);
  return t;
}

std::unique_ptr<DirectTransport> LocalDisk::MakeDirectTransport(
    std::shared_ptr<const PlaneBaseSource> planes, std::unique_ptr<DirectFileIo> io,
    std::unique_ptr<DeviceRecordChecksums> checksums, DirectOptions options) {
  options.durability = options_.durability;
  options.row_checksums = row_checksums_;
  auto t = std::make_unique<DirectTransport>(geometry_, identity_, fingerprint_, *fs_, dir_->fd(),
                                             std::move(planes), std::move(io), std::move(checksums),
                                             std::move(options));
  t->Seed(scan_);
  return t;
}

Result<std::unique_ptr<DiskTransport>> MakeRankTransport(const DiskTransportFactory& factory,
                                                         LocalDisk& disk,
                                                         std::unique_ptr<Transfers> transfers,
                                                         const StagedOptions& staged) {
  if (factory) return factory(disk, std::move(transfers), staged);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<StagedTransport> t,
                          disk.MakeTransport(std::move(transfers), staged));
  return std::unique_ptr<DiskTransport>(std::move(t));
}

}  // namespace strata
