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

Result<uint64_t> ImportedIpcPlanes::Open(uint32_t rank, const IpcMemHandle& handle) {
  for (const Opened& o : opened_) {
    if (o.rank == rank && o.handle == handle) return o.base;
  }
  ContextGuard guard(*driver_, contexts_[rank]->get());
  STRATA_RETURN_IF_ERROR(guard.status());
  STRATA_ASSIGN_OR_RETURN(uint64_t base, driver_->IpcOpen(handle));
  opened_.push_back({rank, handle, base});
  return base;
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
    Result<uint64_t> base = Open(fd.rank, fd.ipc->handle);
    if (!base.ok()) {
      CloseAll();
      return base.status().WithContext("rank " + std::to_string(fd.rank) + " " +
                                       (fd.page_plane
                                            ? "page plane " + g.page_planes[*fd.page_plane].name
                                            : "row plane " + g.row.name));
    }
    RankPlanes& r = (*bases)[fd.rank];
    (fd.page_plane ? r.page_plane_base[*fd.page_plane] : r.row_base) = *base + fd.ipc->offset;
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
