// Test support for the CPU tests of GPU planes shared by legacy CUDA IPC
// handles (fake driver): what a runtime sends for planes it allocated itself,
// runs of page ids, and an importer with batched transfers built over it.
#pragma once

#include <optional>
#include <vector>

#include "cuda/cuda_planes.h"
#include "cuda/cuda_registrar.h"
#include "cuda/cuda_transfers.h"
#include "cuda/driver_api.h"
#include "store/record/record_layout.h"
#include "store/transfer/plane_importer.h"
#include "store/transfer/slab_pool.h"

namespace strata::test {

// One IPC handle per plane of rank 0 of `runtime`, offset 0 (each plane is
// its own block), the row last.
inline std::vector<PlaneFd> IpcHandlesOf(const CudaDriver& d, const CudaPlanes& runtime) {
  std::vector<PlaneFd> out;
  const RankGeometry& g = runtime.geometry().ranks[0];
  ContextGuard guard(d, *d.RetainPrimaryContext(0));
  auto share = [&](std::optional<uint32_t> plane, uint64_t base) {
    out.push_back({.rank = 0,
                   .page_plane = plane,
                   .fd = -1,
                   .ipc = IpcPlane{.handle = *d.IpcHandleOf(base), .offset = 0}});
  };
  for (uint32_t p = 0; p < g.page_planes.size(); ++p) {
    share(p, runtime.page_address(0, p, PageId(0)));
  }
  share(std::nullopt, runtime.row_address(0, StateSlot(0)));
  return out;
}

// Page ids first, first + 1, ..., first + count - 1.
inline std::vector<PageId> PageIds(uint32_t first, uint32_t count) {
  std::vector<PageId> ids;
  for (uint32_t i = 0; i < count; ++i) ids.push_back(PageId(first + i));
  return ids;
}

// `Planes` (an importer of device 0's planes, e.g. ImportedIpcPlanes), a
// registered slab pool with room for `pages` page records, and batched
// transfers built once over the importer.
template <class Planes>
struct ImportRig {
  ImportRig(const std::shared_ptr<const CudaDriver>& driver, const CacheGeometry& geometry,
            uint64_t pages) {
    planes = *Planes::Create(driver, geometry, {0});
    registrar = *CudaHostRegistrar::Create(driver, 0);
    pool = *SlabPool::Create(RecordLayout(geometry).page_record_bytes(), pages + 16, 0,
                             registrar.get());
    CudaTransfersOptions options;
    options.method = CopyMethod::kBatched;
    options.device_ordinals = {0};
    transfers = *MakeCudaTransfers(driver, geometry, *planes, options);
  }
  std::unique_ptr<Planes> planes;
  std::unique_ptr<CudaHostRegistrar> registrar;
  std::unique_ptr<SlabPool> pool;
  std::unique_ptr<Transfers> transfers;
};

}  // namespace strata::test
