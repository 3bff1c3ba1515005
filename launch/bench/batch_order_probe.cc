#include "launch/bench/batch_order_probe.h"

#include <algorithm>
#include <chrono>

#include "launch/bench/gpu_bench_report.h"

namespace strata {

namespace {

Result<double> TimeBatch(const CudaDriver& d, int ordinal, TransferDirection dir,
                         const std::vector<CopyOp>& ops, CudaCopyArrays& arrays, CudaStream stream,
                         int repetitions) {
  uint64_t bytes = 0;
  for (const CopyOp& op : ops) bytes += op.bytes();
  std::vector<double> rates;
  for (int r = 0; r <= repetitions; ++r) {  // r == 0 warms up
    const auto start = std::chrono::steady_clock::now();
    STRATA_RETURN_IF_ERROR(d.BatchCopyAsync(dir, ordinal, ops, arrays, stream));
    STRATA_RETURN_IF_ERROR(d.SynchronizeStream(stream));
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) rates.push_back(static_cast<double>(bytes) / s / 1e9);
  }
  return Percentile(rates, 50);
}

}  // namespace

Result<nlohmann::json> ProbeBatchOrder(const CudaDriver& d, const PrimaryContext& ctx, int ordinal,
                                       const CacheGeometry& g, const RankPlanes& planes,
                                       const std::vector<uint64_t>& record_plane_offsets,
                                       const std::vector<PageId>& ids,
                                       const std::vector<uint8_t*>& records, int repetitions) {
  if (!d.has_batch_copy()) return Status::FailedPrecondition("no cuMemcpyBatchAsync");
  const RankGeometry& r = g.ranks[0];
  // One batch as the transfer thread builds it: page-major, within the
  // 16 MiB and 4,096-entry bounds.
  std::vector<CopyOp> ops;
  uint64_t bytes = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    bool full = false;
    for (uint32_t p = 0; p < r.page_planes.size(); ++p) {
      const uint64_t unit = r.page_planes[p].unit_bytes;
      if (ops.size() == kMaxBatchEntries || bytes + unit > kMaxBatchBytes) {
        full = true;
        break;
      }
      ops.push_back({planes.page_plane_base[p] + ids[i].value * unit,
                     records[i] + record_plane_offsets[p], unit, 1, unit, unit});
      bytes += unit;
    }
    if (full) break;
  }
  ContextGuard guard(d, ctx.get());
  STRATA_RETURN_IF_ERROR(guard.status());
  STRATA_ASSIGN_OR_RETURN(CudaStream stream, d.CreateLowestPriorityStream());
  CudaCopyArrays arrays(kMaxBatchEntries);
  nlohmann::json out;
  Status s;
  for (const char* order : {"device_order", "host_order"}) {
    std::sort(ops.begin(), ops.end(), [&](const CopyOp& a, const CopyOp& b) {
      return order[0] == 'd' ? a.device < b.device : a.host < b.host;
    });
    Result<double> d2h =
        TimeBatch(d, ordinal, TransferDirection::kDeviceToHost, ops, arrays, stream, repetitions);
    Result<double> h2d =
        TimeBatch(d, ordinal, TransferDirection::kHostToDevice, ops, arrays, stream, repetitions);
    if (!d2h.ok() || !h2d.ok()) {
      s = !d2h.ok() ? d2h.status() : h2d.status();
      break;
    }
    out[order] = {{"pieces", ops.size()}, {"d2h_gbps", *d2h}, {"h2d_gbps", *h2d}};
  }
  (void)d.DestroyStream(stream);
  STRATA_RETURN_IF_ERROR(s);
  return out;
}

}  // namespace strata
