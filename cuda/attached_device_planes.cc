#include "cuda/attached_device_planes.h"

namespace strata {

Result<std::unique_ptr<AttachedDevicePlanes>> AttachedDevicePlanes::Create(
    const std::shared_ptr<const CudaDriver>& driver, const CacheGeometry& geometry,
    const std::vector<int>& device_ordinals) {
  std::unique_ptr<AttachedDevicePlanes> p(new AttachedDevicePlanes(geometry, device_ordinals));
  if (driver->has_shareable_handles()) {
    STRATA_ASSIGN_OR_RETURN(p->vmm_,
                            ImportedDevicePlanes::Reserve(driver, geometry, device_ordinals));
  }
  if (driver->has_legacy_ipc()) {
    STRATA_ASSIGN_OR_RETURN(p->ipc_, ImportedIpcPlanes::Create(driver, geometry, device_ordinals));
  }
  if (p->vmm_ == nullptr && p->ipc_ == nullptr) {
    return Status::Unavailable(
        "this CUDA driver can neither import VMM allocations nor open legacy IPC handles, so no "
        "runtime can share its GPU planes");
  }
  return p;
}

std::vector<PlaneHandleKind> AttachedDevicePlanes::handle_kinds() const {
  std::vector<PlaneHandleKind> kinds;
  if (vmm_ != nullptr) kinds.push_back(PlaneHandleKind::kCudaVmmFd);
  if (ipc_ != nullptr) kinds.push_back(PlaneHandleKind::kCudaIpc);
  return kinds;
}

Status AttachedDevicePlanes::Import(std::span<const PlaneFd> fds) {
  if (active_ != nullptr) return Status::FailedPrecondition("planes are already imported");
  if (fds.empty()) return Status::InvalidArgument("no planes to import");
  const bool ipc = fds.front().ipc.has_value();
  for (const PlaneFd& fd : fds) {
    if (fd.ipc.has_value() != ipc) {
      return Status::InvalidArgument("planes shared partly by IPC handle and partly by fd");
    }
  }
  PlaneImporter* form = ipc ? static_cast<PlaneImporter*>(ipc_.get()) : vmm_.get();
  if (form == nullptr) {
    return Status::Unavailable(std::string("this CUDA driver cannot import ") +
                               std::string(PlaneHandleKindName(ipc ? PlaneHandleKind::kCudaIpc
                                                                   : PlaneHandleKind::kCudaVmmFd)));
  }
  STRATA_RETURN_IF_ERROR(form->Import(fds));
  active_ = form;
  // The bases change and the observer hears of it under one hold of
  // observer_mu_, so a SetMappingObserver in between sees either both or
  // neither (never registers twice, nor planes about to be unmapped).
  MutexLock observing(observer_mu_);
  {
    MutexLock lock(mu_);
    if (ipc) {
      ipc_active_ = true;
    } else {
      auto bases = std::make_shared<PlaneBases>();
      for (uint32_t r = 0; r < geometry_.rank_count(); ++r) bases->push_back(vmm_->planes(r));
      vmm_bases_ = std::move(bases);
    }
  }
  if (observer_) {
    const std::shared_ptr<const PlaneBases> mapped = current_bases();
    observer_(mapped.get());
  }
  return Status::Ok();
}

void AttachedDevicePlanes::SetMappingObserver(MappingObserver observer) {
  MutexLock observing(observer_mu_);
  observer_ = std::move(observer);
  const std::shared_ptr<const PlaneBases> mapped = current_bases();
  if (observer_ && mapped != nullptr) observer_(mapped.get());
}

void AttachedDevicePlanes::Release() {
  if (active_ == nullptr) return;
  {
    MutexLock observing(observer_mu_);  // as in Import
    if (observer_) observer_(nullptr);
    MutexLock lock(mu_);  // no job is submitted over these planes from now on
    vmm_bases_ = nullptr;
    ipc_active_ = false;
  }
  active_->Release();
  active_ = nullptr;
}

std::shared_ptr<const PlaneBases> AttachedDevicePlanes::current_bases() const {
  MutexLock lock(mu_);
  if (vmm_bases_ != nullptr) return vmm_bases_;
  return ipc_active_ ? ipc_->current_bases() : nullptr;
}

}  // namespace strata
