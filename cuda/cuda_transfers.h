// CudaTransfers: the Transfers implementation over CUDA devices —
// ThreadedTransfers (per-rank threads, bounded queues, id-to-address
// expansion, bounded batches, all-ranks completion) with one CudaCopyEngine
// per rank (seed 2.5).
#pragma once

#include <memory>
#include <vector>

#include "cuda/cuda_copy_engine.h"
#include "cuda/cuda_planes.h"
#include "store/transfer/threaded_transfers.h"

namespace strata {

struct CudaTransfersOptions {
  // Device of each rank; empty means rank r uses device r % device count.
  std::vector<int> device_ordinals;
  CopyMethod method = DefaultCopyMethod();
  // Two batches in flight measured 0.93 of PCIe on the H200 for 288 KiB planes
  // against 0.59 with one; three keep staged restores of small units at
  // 0.94-0.96 where two left them at 0.86-0.94, because the host's turn
  // between a window's scatter and its next DMA no longer gaps the bus
  // (docs/performance.md, "GPU results").
  uint32_t batches_in_flight = 3;  // per rank, 1 .. kMaxBatchesInFlight
  uint32_t kernel_blocks = 32;     // kKernel only
  StagedCopierOptions staged;      // kStaged only
  ThreadedTransfersOptions threads;
};

// Device ordinals for `rank_count` ranks: `requested` when given (one per
// rank, each below `device_count`), else rank r -> r % device_count.
Result<std::vector<int>> AssignDevices(uint32_t rank_count, int device_count,
                                       const std::vector<int>& requested);

// Transfers between `planes` (device plane bases, one per rank of `geometry`)
// and host slabs. Fails, after stopping every thread, when a rank's device
// cannot start (no batched copies, no context, ...).
Result<std::unique_ptr<Transfers>> MakeCudaTransfers(
    const std::shared_ptr<const CudaDriver>& driver, const CacheGeometry& geometry,
    std::vector<RankPlanes> planes, const CudaTransfersOptions& options = {});

// Transfers over planes whose bases `source` gives per job (legacy CUDA IPC
// planes, cuda/imported_ipc_planes.h; store/transfer/plane_bases.h), on the
// devices options.device_ordinals name. `source` must outlive the transfers.
Result<std::unique_ptr<Transfers>> MakeCudaTransfers(
    const std::shared_ptr<const CudaDriver>& driver, const CacheGeometry& geometry,
    const PlaneBaseSource& source, const CudaTransfersOptions& options = {});

// Transfers over `planes`, on the devices they were allocated on (options'
// device_ordinals are ignored). `planes` must outlive the transfers.
Result<std::unique_ptr<Transfers>> MakeCudaTransfers(const CudaPlanes& planes,
                                                     CudaTransfersOptions options = {});

}  // namespace strata
