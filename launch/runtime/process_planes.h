// ProcessPlanes for `strata rank`: the synthetic runtime's page planes and state
// rows for this process's ranks, and the Transfers that move them — CUDA
// device memory and CudaTransfers when runtime.gpus names devices, host
// buffers and memcpy transfers otherwise (docs/operations.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cuda/driver_api.h"
#include "store/transfer/device_planes.h"
#include "store/transfer/slab_pool.h"
#include "store/transfer/threaded_transfers.h"
#include "store/transfer/transfers.h"

namespace strata {

class ProcessPlanes {
 public:
  // `gpus` empty: host memory. Otherwise rank r of `geometry` lives on
  // gpus[r % gpus.size()]; fails with the driver's reason (no driver, no
  // such device) rather than falling back to host memory.
  // `threads`: the options of every MakeTransfers (its copy rates).
  static Result<std::unique_ptr<ProcessPlanes>> Open(const CacheGeometry& geometry,
                                                     const std::vector<int>& gpus,
                                                     const ThreadedTransfersOptions& threads = {});
  virtual ~ProcessPlanes() = default;

  virtual DevicePlanes& planes() = 0;
  // New transfer threads over planes(); each store takes its own. The
  // planes must outlive them.
  virtual Result<std::unique_ptr<Transfers>> MakeTransfers() = 0;
  // Registers slab pools with the devices (pinned memory for DMA), or null
  // for host memory. Owned here; it must outlive every pool it registered.
  virtual HostRegistrar* registrar() = 0;
  // Free device memory of each GPU the planes use (cuMemGetInfo, 0 when it
  // cannot be read); empty for host memory. Read by the pool's budget.
  virtual std::vector<uint64_t> DeviceFreeBytes() const = 0;
  // The UUID of each GPU the planes use (CudaDriver::DeviceUuid; one that
  // cannot be read is left out); empty for host memory. A pool instance's
  // identity (rank_pool.h).
  virtual std::vector<std::string> DeviceUuids() const = 0;
  // "host memory" or "GPU 0 (NVIDIA H200)", for the startup line.
  virtual std::string Describe() const = 0;
};

// The device of each rank of `geometry`: rank r on gpus[r % gpus.size()];
// kInvalidArgument naming runtime.gpus when a device does not exist.
Result<std::vector<int>> RankDevices(const CudaDriver& driver, const CacheGeometry& geometry,
                                     const std::vector<int>& gpus);
// "rank 0 on GPU 0 (NVIDIA H200), ..." for startup lines.
std::string DescribeDevices(const CudaDriver& driver, const std::vector<int>& ordinals);

}  // namespace strata
