#include "cuda/imported_ipc_planes.h"

#include <string>

namespace strata {

Result<std::unique_ptr<ImportedIpcPlanes>> ImportedIpcPlanes::Create(
    const std::shared_ptr<const CudaDriver>& driver, const CacheGeometry& geometry,
    std::vector<int> device_ordinals) {
  STRATA_RETURN_IF_ERROR(ValidateGeometry(geometry));
  if (device_ordinals.size() != geometry.ranks.size()) {
    return Status::InvalidArgument("imported IPC planes need one device ordinal per rank");
  }
  if (!driver->has_legacy_ipc()) {
    return Status::Unavailable("this CUDA driver cannot open legacy IPC handles");
  }
  std::unique_ptr<ImportedIpcPlanes> p(new ImportedIpcPlanes(driver, geometry));
  p->ordinals_ = std::move(device_ordinals);
  for (int ordinal : p->ordinals_) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<PrimaryContext> context,
                            PrimaryContext::Retain(driver, ordinal));
    p->contexts_.push_back(std::move(context));
  }
  return p;
}

ImportedIpcPlanes::~ImportedIpcPlanes() { Release(); }

Result<ImportedIpcPlanes::Opened> ImportedIpcPlanes::Open(uint32_t rank,
                                                          const IpcMemHandle& handle) {
  for (const Opened& o : opened_) {
    if (o.rank == rank && o.handle == handle) return o;
  }
  ContextGuard guard(*driver_, contexts_[rank]->get());
  STRATA_RETURN_IF_ERROR(guard.status());
  STRATA_ASSIGN_OR_RETURN(uint64_t base, driver_->IpcOpen(handle));
  opened_.push_back({rank, handle, base, 0});
  // Kept open (and closed by CloseAll) even when refused below.
  STRATA_ASSIGN_OR_RETURN(CudaDriver::DeviceBlock block, driver_->BlockOf(base));
  if (block.ordinal != ordinals_[rank]) {
    return Status::InvalidArgument("the shared block is memory of device " +
                                   std::to_string(block.ordinal) + ", not of this rank's device " +
                                   std::to_string(ordinals_[rank]));
  }
  opened_.back().bytes = block.base + block.bytes - base;  // base: the block's own
  return opened_.back();
}

Status ImportedIpcPlanes::Import(std::span<const PlaneFd> fds) {
  if (imported_) return Status::FailedPrecondition("planes are already imported");
  size_t planes = 0;
  auto bases = std::make_shared<PlaneBases>();
  for (const RankGeometry& g : geometry_.ranks) {
    planes += g.page_planes.size() + 1;
    bases->push_back({.page_plane_base = std::vector<uint64_t>(g.page_planes.size(), 0)});
  }
  if (fds.size() != planes) {
    return Status::InvalidArgument(std::to_string(fds.size()) + " IPC handles for " +
                                   std::to_string(planes) + " planes");
  }
  for (const PlaneFd& fd : fds) {
    if (fd.rank >= geometry_.ranks.size() || !fd.ipc) {
      CloseAll();
      return Status::InvalidArgument("a plane without an IPC handle, or of an unknown rank");
    }
    const RankGeometry& g = geometry_.ranks[fd.rank];
    const std::string plane = "rank " + std::to_string(fd.rank) + " " +
                              (fd.page_plane ? "page plane " + g.page_planes[*fd.page_plane].name
                                             : "row plane " + g.row.name);
    Result<Opened> block = Open(fd.rank, fd.ipc->handle);
    if (!block.ok()) {
      CloseAll();
      return block.status().WithContext(plane);
    }
    const uint64_t bytes = fd.page_plane ? g.page_planes[*fd.page_plane].unit_bytes * g.page_count
                                         : g.row.unit_bytes * g.row_count;
    if (fd.ipc->offset > block->bytes || block->bytes - fd.ipc->offset < bytes) {
      CloseAll();
      return Status::InvalidArgument(plane + ": " + std::to_string(bytes) + " bytes at offset " +
                                     std::to_string(fd.ipc->offset) +
                                     " run past the end of its shared block of " +
                                     std::to_string(block->bytes) + " bytes");
    }
    RankPlanes& r = (*bases)[fd.rank];
    (fd.page_plane ? r.page_plane_base[*fd.page_plane] : r.row_base) = block->base + fd.ipc->offset;
  }
  imported_ = true;
  MutexLock lock(mu_);
  bases_ = std::move(bases);
  return Status::Ok();
}

void ImportedIpcPlanes::CloseAll() {
  for (const Opened& o : opened_) {
    ContextGuard guard(*driver_, contexts_[o.rank]->get());
    if (guard.status().ok()) (void)driver_->IpcClose(o.base);
  }
  opened_.clear();
}

void ImportedIpcPlanes::Release() {
  {
    MutexLock lock(mu_);
    bases_ = nullptr;  // no job is submitted over these blocks from now on
  }
  CloseAll();
  imported_ = false;
}

std::shared_ptr<const PlaneBases> ImportedIpcPlanes::current_bases() const {
  MutexLock lock(mu_);
  return bases_;
}

}  // namespace strata
