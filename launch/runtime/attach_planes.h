// AttachPlanes for `strata rank --attach-socket`: the planes an attached
// runtime shares with this process's ranks (docs/embedding.md) — memfd host
// memory when runtime.gpus is none; on each rank's GPU otherwise, as CUDA
// VMM allocations or cudaMalloc'd blocks by legacy IPC handle — with the Transfers over them and
// the registrar that pins the store's slabs for those devices. The counterpart of ProcessPlanes,
// whose planes the synthetic runtime owns.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda/driver_api.h"
#include "store/transfer/plane_bases.h"
#include "store/transfer/plane_importer.h"
#include "store/transfer/slab_pool.h"
#include "store/transfer/threaded_transfers.h"
#include "store/transfer/transfers.h"

namespace strata {

// The GPU an attached runtime's planes are on (ranks in separate
// processes: one rank, one GPU per process).
struct AttachedGpu {
  std::shared_ptr<const CudaDriver> driver;
  int ordinal = 0;
};

class AttachPlanes {
 public:
  // `gpus` as ProcessPlanes::Open takes them: empty for host memory.
  // `threads`: the options of every MakeTransfers (its copy rates).
  static Result<std::unique_ptr<AttachPlanes>> Open(const CacheGeometry& geometry,
                                                    const std::vector<int>& gpus,
                                                    const ThreadedTransfersOptions& threads = {});
  virtual ~AttachPlanes() = default;

  // What the attach server maps a runtime's memory into.
  virtual PlaneImporter& importer() = 0;
  // New transfer threads over the planes; the planes must outlive them.
  virtual Result<std::unique_ptr<Transfers>> MakeTransfers() = 0;
  // Pins slab pools for the devices, or null for host memory.
  virtual HostRegistrar* registrar() = 0;
  // For the startup line.
  virtual std::string Describe() const = 0;
  // For the direct transport (launch/rank/rank_disk_transport.h): where the
  // planes of the attachment now mapped are, read per job, and the GPU they
  // are on. Null / nullopt for host memory.
  virtual std::shared_ptr<const PlaneBaseSource> bases() const { return nullptr; }
  virtual std::optional<AttachedGpu> gpu() const { return std::nullopt; }
  // Tells `observer` of each attachment's GPU planes (AttachedDevicePlanes::
  // SetMappingObserver: their bases once mapped, null before unmapped), so
  // the direct transport registers them with cuFile per attachment. Host
  // planes: never called.
  virtual void ObserveMappings(std::function<void(const PlaneBases* mapped)> observer) {
    (void)observer;
  }
};

}  // namespace strata
