// Where a staged batch's time goes (issue 17): the halves of the staged
// path timed apart, over the batches a transfer thread would build for one
// preset's pages (page-major, within the 16 MiB / 4,096-entry bounds), with
// no store code around them. Part of `strata bench gpu`.
//
//   dma_extents   only the DMAs of every stage, exactly as StagedCopier
//                 issues them (one per host extent; one cuMemcpyBatchAsync
//                 per stage of several), alternating the two windows;
//   dma_window    one contiguous DMA of each batch's used window bytes (what
//                 the extents would cost with no gaps between records);
//   kernel_<n>sm  only the gather (planes -> window) and scatter (window ->
//                 planes) launches, one per batch, on n SMs.
//
// Each is a rate of the batches' payload bytes; the gap between dma_extents
// and the contiguous baseline is the cost of cutting the copy into extents,
// and a kernel rate below the bus says the kernel bounds the pipeline.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "cuda/driver_api.h"
#include "cuda/staged_copier.h"
#include "store/record/geometry.h"
#include "store/transfer/copy_engine.h"

namespace strata {

struct StagedProbeInput {
  std::shared_ptr<const CudaDriver> driver;
  const PrimaryContext* context = nullptr;
  int ordinal = 0;
  const RankGeometry* rank = nullptr;                           // rank 0 of the preset
  const RankPlanes* planes = nullptr;                           // its planes on the device
  const std::vector<uint64_t>* record_plane_offsets = nullptr;  // plane p's offset in a record
  const std::vector<PageId>* ids = nullptr;                     // page i goes to ids[i]
  const std::vector<uint8_t*>* records = nullptr;               // page i's host record
  StagedCopierOptions staged;
  int repetitions = 3;
};

// {"batches", "payload_bytes", "extents_per_batch", "dma_extents": {"d2h_gbps",
// "h2d_gbps"}, "dma_window": {...}, "kernel_<n>sm": {"gather_gbps",
// "scatter_gbps"} for n = staged.blocks and twice that}; medians.
Result<nlohmann::json> ProbeStagedPath(const StagedProbeInput& in);

}  // namespace strata
