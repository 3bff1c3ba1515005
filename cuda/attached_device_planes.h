// AttachedDevicePlanes: the GPU planes an attached runtime shares with
// `strata rank --attach-socket --gpus` (docs/embedding.md), in either form a
// runtime allocates them: CUDA VMM allocations exported as file descriptors
// (mapped at addresses reserved at startup, cuda/imported_device_planes.h)
// or cudaMalloc'd blocks shared by legacy IPC handles (opened where the
// driver picks, cuda/imported_ipc_planes.h). Each attach picks one form by
// what its Hello carries; the transfers are built once over this object as
// their PlaneBaseSource, so a job copies through the planes of the
// attachment it was submitted under, whichever form that was.
//
// Contract: as PlaneImporter's and PlaneBaseSource's. current_bases() is
// null while nothing is imported (a job is then refused); Release withdraws
// the bases before unmapping. Thread: Import/Release on the owner's thread;
// current_bases from any.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "cuda/imported_device_planes.h"
#include "cuda/imported_ipc_planes.h"
#include "store/base/mutex.h"

namespace strata {

class AttachedDevicePlanes final : public PlaneImporter, public PlaneBaseSource {
 public:
  // Rank r's planes are on device `device_ordinals[r]`. Offers every form
  // the driver supports; fails when it supports neither.
  static Result<std::unique_ptr<AttachedDevicePlanes>> Create(
      const std::shared_ptr<const CudaDriver>& driver, const CacheGeometry& geometry,
      const std::vector<int>& device_ordinals);

  const std::vector<int>& device_ordinals() const { return ordinals_; }

  // PlaneImporter: routes each attach by its handles' kind.
  const CacheGeometry& shared_geometry() const override { return geometry_; }
  std::vector<PlaneHandleKind> handle_kinds() const override;
  Status Import(std::span<const PlaneFd> fds) override;
  void Release() override;
  bool imported() const override { return active_ != nullptr; }

  // PlaneBaseSource.
  std::shared_ptr<const PlaneBases> current_bases() const override;

  // Told of each attachment's planes: called with their bases once they are
  // mapped (Import, before the attach gate opens), and with null before
  // they are unmapped (Release, after the gate drained); called at once with
  // the bases mapped now, if any. Replaces the previous one; empty clears
  // it. Thread: any (Import and Release call it under the same lock).
  using MappingObserver = std::function<void(const PlaneBases* mapped)>;
  void SetMappingObserver(MappingObserver observer);

 private:
  AttachedDevicePlanes(const CacheGeometry& geometry, std::vector<int> ordinals)
      : geometry_(geometry), ordinals_(std::move(ordinals)) {}

  CacheGeometry geometry_;
  std::vector<int> ordinals_;
  std::unique_ptr<ImportedDevicePlanes> vmm_;  // null without VMM sharing
  std::unique_ptr<ImportedIpcPlanes> ipc_;     // null without legacy IPC
  PlaneImporter* active_ = nullptr;            // the form imported now
  mutable Mutex mu_;
  // What current_bases() serves: the VMM planes' reserved addresses while
  // they are imported, else (ipc_active_) the IPC importer's snapshot.
  std::shared_ptr<const PlaneBases> vmm_bases_ GUARDED_BY(mu_);
  bool ipc_active_ GUARDED_BY(mu_) = false;
  Mutex observer_mu_;  // held across the observer's calls
  MappingObserver observer_ GUARDED_BY(observer_mu_);
};

}  // namespace strata
