#include "cuda/staged_copier.h"

#include <cstdint>

namespace strata {

StagedCopier::StagedCopier(std::shared_ptr<const CudaDriver> driver, int ordinal,
                           CudaStream kernel_stream, const StagedCopierOptions& options)
    : driver_(std::move(driver)),
      ordinal_(ordinal),
      kernel_stream_(kernel_stream),
      options_(options) {}

Result<std::unique_ptr<StagedCopier>> StagedCopier::Create(std::shared_ptr<const CudaDriver> driver,
                                                           int ordinal, CudaStream kernel_stream,
                                                           const StagedCopierOptions& options) {
  if (options.stage_bytes == 0 || options.kernel_piece_bytes == 0 || options.launch_bytes == 0) {
    return Status::InvalidArgument("staging stage, launch and kernel piece bytes must be positive");
  }
  if (options.kernel_piece_bytes > UINT32_MAX) {
    return Status::InvalidArgument("a kernel piece must fit 32 bits (launch parameters)");
  }
  std::unique_ptr<StagedCopier> c(
      new StagedCopier(std::move(driver), ordinal, kernel_stream, options));
  const CudaDriver& d = *c->driver_;
  c->limits_.window_bytes = StagingWindowBytes(kMaxBatchBytes, kMaxBatchEntries);
  STRATA_ASSERT(c->limits_.window_bytes <= UINT32_MAX, "window offsets must fit 32 bits");
  c->limits_.stage_bytes = options.stage_bytes;
  c->limits_.kernel_piece_bytes = options.kernel_piece_bytes;
  c->limits_.direct_piece_bytes = options.direct_piece_bytes;
  c->stages_per_window_ = c->limits_.window_bytes / options.stage_bytes + 1;
  KernelShape shape;
  shape.blocks = options.blocks;
  shape.threads_per_block = options.threads_per_block;
  shape.pieces_per_buffer = MaxStagedPieces(kMaxBatchBytes, kMaxBatchEntries, c->limits_);
  shape.host_access = KernelHostAccess::kDeviceOnly;
  STRATA_ASSIGN_OR_RETURN(c->kernel_, GatherKernel::Load(c->driver_, ordinal, shape));
  for (uint64_t& w : c->windows_) {
    STRATA_ASSIGN_OR_RETURN(w, d.MemAlloc(c->limits_.window_bytes));
  }
  STRATA_ASSIGN_OR_RETURN(c->dma_stream_, d.CreateLowestPriorityStream());
  c->handoff_.assign(kWindows * c->stages_per_window_, nullptr);
  for (CudaEvent& e : c->handoff_) {
    STRATA_ASSIGN_OR_RETURN(e, d.CreateBlockingEvent());
  }
  c->dma_ops_.reserve(kMaxBatchEntries);
  return c;
}

StagedCopier::~StagedCopier() {
  if (dma_stream_ != nullptr) (void)driver_->SynchronizeStream(dma_stream_);
  for (CudaEvent e : handoff_) {
    if (e != nullptr) (void)driver_->DestroyEvent(e);
  }
  if (dma_stream_ != nullptr) (void)driver_->DestroyStream(dma_stream_);
  for (uint64_t w : windows_) {
    if (w != 0) (void)driver_->MemFree(w);
  }
}

Status StagedCopier::SynchronizeDma() const { return driver_->SynchronizeStream(dma_stream_); }

Status StagedCopier::Dma(TransferDirection direction, const StagingStage& stage, uint64_t window,
                         CudaCopyArrays& arrays) {
  const std::vector<StagedExtent>& extents = planner_.extents();
  if (stage.extent_count == 1 || !driver_->has_batch_copy()) {
    for (uint32_t i = 0; i < stage.extent_count; ++i) {
      const StagedExtent& e = extents[stage.first_extent + i];
      STRATA_RETURN_IF_ERROR(
          driver_->CopyAsync(direction, window + e.window, e.host, e.bytes, dma_stream_));
    }
    return Status::Ok();
  }
  dma_ops_.clear();
  for (uint32_t i = 0; i < stage.extent_count; ++i) {
    const StagedExtent& e = extents[stage.first_extent + i];
    dma_ops_.push_back({window + e.window, e.host, e.bytes, 1, e.bytes, e.bytes});
  }
  return driver_->BatchCopyAsync(direction, ordinal_, dma_ops_, arrays, dma_stream_);
}

Status StagedCopier::DirectDma(TransferDirection direction, CudaCopyArrays& arrays) {
  const std::vector<CopyDescriptor>& direct = planner_.direct();
  if (direct.empty()) return Status::Ok();
  if (direct.size() == 1 || !driver_->has_batch_copy()) {
    for (const CopyDescriptor& p : direct) {
      STRATA_RETURN_IF_ERROR(driver_->CopyAsync(direction, p.device, p.host, p.bytes, dma_stream_));
    }
    return Status::Ok();
  }
  dma_ops_.clear();
  for (const CopyDescriptor& p : direct) {
    dma_ops_.push_back({p.device, p.host, p.bytes, 1, p.bytes, p.bytes});
  }
  return driver_->BatchCopyAsync(direction, ordinal_, dma_ops_, arrays, dma_stream_);
}

Status StagedCopier::RunStage(uint32_t slot, const StagingStage& stage, RestorePieceList list) {
  const std::vector<StagedPiece>& pieces = planner_.pieces();
  const uint32_t end = stage.first_piece + stage.piece_count;
  for (uint32_t first = stage.first_piece; first < end;) {
    uint32_t next = first;
    uint64_t bytes = 0;
    while (next < end && (next == first || bytes + pieces[next].bytes <= options_.launch_bytes)) {
      bytes += pieces[next].bytes;
      ++next;
    }
    STRATA_RETURN_IF_ERROR(list == RestorePieceList::kMappedHost
                               ? kernel_->RunFromHost(slot, first, next - first, kernel_stream_)
                               : kernel_->Run(slot, first, next - first, kernel_stream_));
    first = next;
  }
  return Status::Ok();
}

Status StagedCopier::RunStageParams(uint64_t window, const StagingStage& stage) {
  const std::vector<StagedPiece>& pieces = planner_.pieces();
  const uint32_t end = stage.first_piece + stage.piece_count;
  KernelParamPieces launch;
  launch.window = window;
  uint64_t bytes = 0;
  for (uint32_t i = stage.first_piece; i < end; ++i) {
    const StagedPiece& p = pieces[i];
    if (launch.count == KernelParamPieces::kMax ||
        (launch.count > 0 && bytes + p.bytes > options_.launch_bytes)) {
      STRATA_RETURN_IF_ERROR(kernel_->RunParams(launch, kernel_stream_));
      launch.count = 0;
      bytes = 0;
    }
    // A window offset and a kernel piece fit 32 bits: windows are ~17 MiB,
    // pieces at most kernel_piece_bytes.
    launch.pieces[launch.count++] = {p.device, static_cast<uint32_t>(p.window),
                                     static_cast<uint32_t>(p.bytes)};
    bytes += p.bytes;
  }
  return kernel_->RunParams(launch, kernel_stream_);
}

Result<CudaStream> StagedCopier::Issue(TransferDirection direction,
                                       std::span<const CopyDescriptor> batch, uint32_t slot,
                                       CudaCopyArrays& arrays) {
  STRATA_ASSERT(slot < kWindows, "staging window out of range");
  STRATA_RETURN_IF_ERROR(planner_.Plan(batch, limits_));
  const std::vector<StagedPiece>& pieces = planner_.pieces();
  const std::vector<StagingStage>& stages = planner_.stages();
  if (pieces.size() > kernel_->capacity() || stages.size() > stages_per_window_) {
    return Status::InvalidArgument("staged batch of " + std::to_string(pieces.size()) +
                                   " kernel pieces exceeds the piece list");
  }
  const uint64_t window = windows_[slot];
  const bool out = direction == TransferDirection::kDeviceToHost;
  const RestorePieceList source = options_.restore_piece_list;
  KernelPiece* list = kernel_->pieces(slot);
  // A restore with its pieces in the launches' parameters needs no list.
  const size_t listed = !out && source == RestorePieceList::kParams ? 0 : pieces.size();
  for (size_t i = 0; i < listed; ++i) {
    const StagedPiece& p = pieces[i];
    list[i] = out ? KernelPiece{p.device, window + p.window, p.bytes}
                  : KernelPiece{window + p.window, p.device, p.bytes};
  }
  const CudaDriver& d = *driver_;
  // Direct pieces go first on the DMA stream: they need no kernel, so they
  // move while the first stage is gathered (copy-out) and ahead of the
  // extents the scatters wait for (restore, where stream order makes every
  // handoff event cover them too).
  STRATA_RETURN_IF_ERROR(DirectDma(direction, arrays));
  if (stages.empty()) return dma_stream_;
  if (out) {
    STRATA_RETURN_IF_ERROR(kernel_->Upload(slot, pieces.size(), kernel_stream_));
    for (size_t k = 0; k < stages.size(); ++k) {
      STRATA_RETURN_IF_ERROR(RunStage(slot, stages[k], RestorePieceList::kUploaded));
      STRATA_RETURN_IF_ERROR(d.RecordEvent(handoff(slot, k), kernel_stream_));
    }
    for (size_t k = 0; k < stages.size(); ++k) {
      STRATA_RETURN_IF_ERROR(d.StreamWaitEvent(dma_stream_, handoff(slot, k)));
      STRATA_RETURN_IF_ERROR(Dma(direction, stages[k], window, arrays));
    }
    return dma_stream_;
  }
  // The piece list travels on the DMA stream ahead of the extents: on the
  // kernel stream, behind the previous batch's scatters, the small upload
  // would wait for this batch's extents on the host-to-device copy engine and
  // no scatter could overlap them (measured: restores at 0.63 of PCIe).
  // (A stream of its own for the upload was measured worse: docs/performance.md.)
  if (source == RestorePieceList::kUploaded) {
    STRATA_RETURN_IF_ERROR(kernel_->Upload(slot, pieces.size(), dma_stream_));
  }
  for (size_t k = 0; k < stages.size(); ++k) {
    STRATA_RETURN_IF_ERROR(Dma(direction, stages[k], window, arrays));
    STRATA_RETURN_IF_ERROR(d.RecordEvent(handoff(slot, k), dma_stream_));
  }
  for (size_t k = 0; k < stages.size(); ++k) {
    STRATA_RETURN_IF_ERROR(d.StreamWaitEvent(kernel_stream_, handoff(slot, k)));
    STRATA_RETURN_IF_ERROR(source == RestorePieceList::kParams ? RunStageParams(window, stages[k])
                                                               : RunStage(slot, stages[k], source));
  }
  return kernel_stream_;
}

}  // namespace strata
