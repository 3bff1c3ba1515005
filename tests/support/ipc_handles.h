// Test support for the CPU tests of GPU planes shared by legacy CUDA IPC
// handles (fake driver): what a runtime sends for planes it allocated itself,
// and runs of page ids.
#pragma once

#include <optional>
#include <vector>

#include "cuda/cuda_planes.h"
#include "cuda/driver_api.h"
#include "store/transfer/plane_importer.h"

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

}  // namespace strata::test
