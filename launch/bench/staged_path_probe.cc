#include "launch/bench/staged_path_probe.h"

#include <chrono>
#include <cmath>

#include "cuda/gather_kernel.h"
#include "cuda/staging_plan.h"
#include "launch/bench/gpu_bench_report.h"

namespace strata {

namespace {

using Clock = std::chrono::steady_clock;

// One batch's plan, kept (a planner holds only its last plan).
struct BatchPlan {
  std::vector<StagedPiece> pieces;
  std::vector<StagedExtent> extents;
  std::vector<StagingStage> stages;
  uint64_t window_used = 0;
  uint64_t payload = 0;
};

// Page-major batches of every page, as a transfer thread builds them.
std::vector<std::vector<CopyDescriptor>> Batches(const StagedProbeInput& in) {
  const RankGeometry& r = *in.rank;
  std::vector<std::vector<CopyDescriptor>> out(1);
  uint64_t bytes = 0;
  for (size_t i = 0; i < in.ids->size(); ++i) {
    uint64_t page = 0;
    for (const PlaneSpec& p : r.page_planes) page += p.unit_bytes;
    if (out.back().size() + r.page_planes.size() > kMaxBatchEntries ||
        bytes + page > kMaxBatchBytes) {
      out.emplace_back();
      bytes = 0;
    }
    for (uint32_t p = 0; p < r.page_planes.size(); ++p) {
      const uint64_t unit = r.page_planes[p].unit_bytes;
      out.back().push_back({in.planes->page_plane_base[p] + (*in.ids)[i].value * unit,
                            (*in.records)[i] + (*in.record_plane_offsets)[p], unit});
    }
    bytes += page;
  }
  return out;
}

// Median GB/s of `payload` bytes over `repetitions` runs of `issue` (one
// warm-up first), each ended by a stream synchronize.
template <typename Issue>
Result<double> Rate(const CudaDriver& d, CudaStream stream, uint64_t payload, int repetitions,
                    Issue issue) {
  std::vector<double> rates;
  for (int r = 0; r <= repetitions; ++r) {
    const auto start = Clock::now();
    STRATA_RETURN_IF_ERROR(issue());
    STRATA_RETURN_IF_ERROR(d.SynchronizeStream(stream));
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (r > 0) rates.push_back(static_cast<double>(payload) / s / 1e9);
  }
  return Percentile(rates, 50);
}

struct ProbeState {
  const StagedProbeInput* in = nullptr;
  std::vector<BatchPlan> plans;
  uint64_t windows[2] = {};
  uint64_t payload = 0;
  CudaStream stream = nullptr;
  CudaCopyArrays arrays{kMaxBatchEntries};
  std::vector<CopyOp> ops;
};

Status ExtentDmas(ProbeState& st, TransferDirection dir) {
  const CudaDriver& d = *st.in->driver;
  for (size_t b = 0; b < st.plans.size(); ++b) {
    const BatchPlan& p = st.plans[b];
    const uint64_t window = st.windows[b % 2];
    for (const StagingStage& stage : p.stages) {
      if (stage.extent_count == 1 || !d.has_batch_copy()) {
        for (uint32_t i = 0; i < stage.extent_count; ++i) {
          const StagedExtent& e = p.extents[stage.first_extent + i];
          STRATA_RETURN_IF_ERROR(d.CopyAsync(dir, window + e.window, e.host, e.bytes, st.stream));
        }
        continue;
      }
      st.ops.clear();
      for (uint32_t i = 0; i < stage.extent_count; ++i) {
        const StagedExtent& e = p.extents[stage.first_extent + i];
        st.ops.push_back({window + e.window, e.host, e.bytes, 1, e.bytes, e.bytes});
      }
      STRATA_RETURN_IF_ERROR(d.BatchCopyAsync(dir, st.in->ordinal, st.ops, st.arrays, st.stream));
    }
  }
  return Status::Ok();
}

Status WindowDmas(ProbeState& st, TransferDirection dir) {
  for (size_t b = 0; b < st.plans.size(); ++b) {
    STRATA_RETURN_IF_ERROR(st.in->driver->CopyAsync(dir, st.windows[b % 2], (*st.in->records)[0],
                                                    st.plans[b].window_used, st.stream));
  }
  return Status::Ok();
}

Status Kernels(ProbeState& st, GatherKernel& kernel, TransferDirection dir) {
  for (size_t b = 0; b < st.plans.size(); ++b) {
    const BatchPlan& p = st.plans[b];
    const uint32_t slot = b % 2;
    // The list of `slot` was last launched two batches ago, on this stream.
    if (b >= 2) STRATA_RETURN_IF_ERROR(st.in->driver->SynchronizeStream(st.stream));
    KernelPiece* list = kernel.pieces(slot);
    const uint64_t window = st.windows[slot];
    for (size_t i = 0; i < p.pieces.size(); ++i) {
      const StagedPiece& x = p.pieces[i];
      list[i] = dir == TransferDirection::kDeviceToHost
                    ? KernelPiece{x.device, window + x.window, x.bytes}
                    : KernelPiece{window + x.window, x.device, x.bytes};
    }
    STRATA_RETURN_IF_ERROR(kernel.Upload(slot, p.pieces.size(), st.stream));
    STRATA_RETURN_IF_ERROR(kernel.Run(slot, 0, p.pieces.size(), st.stream));
  }
  return Status::Ok();
}

double Round3(double v) { return std::round(v * 1000) / 1000; }

// The staged copier itself, batch after batch through its two windows, each
// window reused once its previous batch finished (as the engine does), with
// no transfer thread around it.
Status Pipeline(ProbeState& st, StagedCopier& copier, CudaStream kernel_stream,
                CudaEvent (&done)[2], const std::vector<std::vector<CopyDescriptor>>& batches,
                TransferDirection dir) {
  const CudaDriver& d = *st.in->driver;
  for (size_t b = 0; b < batches.size(); ++b) {
    const uint32_t slot = b % 2;
    if (b >= 2) STRATA_RETURN_IF_ERROR(d.SynchronizeEvent(done[slot]));
    STRATA_ASSIGN_OR_RETURN(CudaStream s, copier.Issue(dir, batches[b], slot, st.arrays));
    STRATA_RETURN_IF_ERROR(d.RecordEvent(done[slot], s));
  }
  STRATA_RETURN_IF_ERROR(copier.SynchronizeDma());
  return d.SynchronizeStream(kernel_stream);
}

nlohmann::json Pair(const char* a, double x, const char* b, double y) {
  return {{a, Round3(x)}, {b, Round3(y)}};
}

}  // namespace

Result<nlohmann::json> ProbeStagedPath(const StagedProbeInput& in) {
  const CudaDriver& d = *in.driver;
  StagingLimits limits;
  limits.window_bytes = StagingWindowBytes(kMaxBatchBytes, kMaxBatchEntries);
  limits.stage_bytes = in.staged.stage_bytes;
  limits.kernel_piece_bytes = in.staged.kernel_piece_bytes;
  ProbeState st;
  st.in = &in;
  StagingPlanner planner;
  uint64_t extents = 0;
  for (const std::vector<CopyDescriptor>& batch : Batches(in)) {
    STRATA_RETURN_IF_ERROR(planner.Plan(batch, limits));
    BatchPlan p{planner.pieces(), planner.extents(), planner.stages(), planner.window_used(), 0};
    for (const CopyDescriptor& c : batch) p.payload += c.bytes;
    st.payload += p.payload;
    extents += p.extents.size();
    st.plans.push_back(std::move(p));
  }
  ContextGuard guard(d, in.context->get());
  STRATA_RETURN_IF_ERROR(guard.status());
  nlohmann::json out;
  out["batches"] = st.plans.size();
  out["payload_bytes"] = st.payload;
  out["extents_per_batch"] = Round3(static_cast<double>(extents) / st.plans.size());
  Status s;
  for (uint64_t& w : st.windows) {
    Result<uint64_t> a = d.MemAlloc(limits.window_bytes);
    if (!a.ok()) s = a.status();
    w = a.ok() ? *a : 0;
  }
  Result<CudaStream> stream = d.CreateLowestPriorityStream();
  if (s.ok() && !stream.ok()) s = stream.status();
  if (s.ok()) st.stream = *stream;
  auto both = [&](const char* name, auto issue) {
    if (!s.ok()) return;
    Result<double> d2h = Rate(d, st.stream, st.payload, in.repetitions,
                              [&] { return issue(TransferDirection::kDeviceToHost); });
    Result<double> h2d = Rate(d, st.stream, st.payload, in.repetitions,
                              [&] { return issue(TransferDirection::kHostToDevice); });
    if (!d2h.ok() || !h2d.ok()) {
      s = !d2h.ok() ? d2h.status() : h2d.status();
      return;
    }
    out[name] = Pair("d2h_gbps", *d2h, "h2d_gbps", *h2d);
  };
  both("dma_extents", [&](TransferDirection dir) { return ExtentDmas(st, dir); });
  both("dma_window", [&](TransferDirection dir) { return WindowDmas(st, dir); });
  for (uint32_t blocks : {in.staged.blocks, 2 * in.staged.blocks}) {
    if (!s.ok()) break;
    KernelShape shape;
    shape.blocks = blocks;
    shape.threads_per_block = in.staged.threads_per_block;
    shape.pieces_per_buffer = MaxStagedPieces(kMaxBatchBytes, kMaxBatchEntries, limits);
    shape.host_access = KernelHostAccess::kDeviceOnly;
    Result<std::unique_ptr<GatherKernel>> kernel = GatherKernel::Load(in.driver, in.ordinal, shape);
    if (!kernel.ok()) {
      s = kernel.status();
      break;
    }
    both(("kernel_" + std::to_string(blocks) + "sm").c_str(),
         [&](TransferDirection dir) { return Kernels(st, **kernel, dir); });
  }
  // The whole copier, for a few stage sizes.
  const std::vector<std::vector<CopyDescriptor>> batches = Batches(in);
  for (uint64_t stage : {in.staged.stage_bytes, uint64_t{4} << 20, uint64_t{16} << 20}) {
    if (!s.ok()) break;
    StagedCopierOptions options = in.staged;
    options.stage_bytes = stage;
    CudaEvent done[2] = {};
    Result<std::unique_ptr<StagedCopier>> copier =
        StagedCopier::Create(in.driver, in.ordinal, st.stream, options);
    if (!copier.ok()) {
      s = copier.status();
      break;
    }
    for (CudaEvent& e : done) {
      Result<CudaEvent> made = d.CreateBlockingEvent();
      if (!made.ok()) s = made.status();
      e = made.ok() ? *made : nullptr;
    }
    both(("copier_stage_" + std::to_string(stage >> 10) + "k").c_str(), [&](TransferDirection dir) {
      return Pipeline(st, **copier, st.stream, done, batches, dir);
    });
    copier->reset();
    for (CudaEvent e : done) {
      if (e != nullptr) (void)d.DestroyEvent(e);
    }
  }
  if (st.stream != nullptr) (void)d.DestroyStream(st.stream);
  for (uint64_t w : st.windows) {
    if (w != 0) (void)d.MemFree(w);
  }
  STRATA_RETURN_IF_ERROR(s);
  return out;
}

}  // namespace strata
