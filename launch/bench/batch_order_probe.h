// Why the batched restore of small pieces is slower than cuMemcpyBatchAsync
// alone: one 16 MiB batch of a geometry's (page, plane) pieces, exactly as a
// transfer thread builds it, issued straight to cuMemcpyBatchAsync in two
// orders (sorted by device address, as CopyPlanner issues them, and sorted
// by host address), timed per direction. Part of `strata bench gpu`.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "cuda/driver_api.h"
#include "store/record/geometry.h"
#include "store/transfer/copy_engine.h"

namespace strata {

// Probes rank 0 of `g` with planes at `planes` and host page records
// `records[i]` for page `ids[i]`; `record_plane_offsets[p]` is plane p's
// offset in a record. Returns {"device_order": {...}, "host_order": {...}},
// each {"pieces", "d2h_gbps", "h2d_gbps"} (medians of `repetitions`).
Result<nlohmann::json> ProbeBatchOrder(const CudaDriver& d, const PrimaryContext& ctx, int ordinal,
                                       const CacheGeometry& g, const RankPlanes& planes,
                                       const std::vector<uint64_t>& record_plane_offsets,
                                       const std::vector<PageId>& ids,
                                       const std::vector<uint8_t*>& records, int repetitions);

}  // namespace strata
