// What `strata bench prefill` and `strata bench interference` copy: one
// rank's GPU planes of a preset, registered host slabs holding one page
// record per page, and the device page ids in a seeded shuffled order (the
// scattered layout of a real restore), with the default transfers over them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cuda/cuda_planes.h"
#include "cuda/cuda_registrar.h"
#include "cuda/cuda_transfers.h"
#include "store/transfer/slab_pool.h"
#include "store/transfer/transfers.h"

namespace strata {

struct GpuPages {
  CacheGeometry geometry;
  std::unique_ptr<CudaPlanes> planes;
  std::unique_ptr<CudaHostRegistrar> registrar;
  std::shared_ptr<SlabPool> pool;
  std::vector<uint8_t*> records;  // records[i] is page i's host record
  std::vector<PageId> ids;        // page ids 0 .. pages-1, shuffled (seed 7)
  std::unique_ptr<Transfers> transfers;
};

// `options` configure the transfers (the defaults unless a sweep says
// otherwise); their device ordinals are ignored.
Result<std::unique_ptr<GpuPages>> OpenGpuPages(const std::shared_ptr<const CudaDriver>& driver,
                                               const std::string& preset, uint64_t pages,
                                               int device,
                                               const CudaTransfersOptions& options = {});

}  // namespace strata
