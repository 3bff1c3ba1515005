// StagedCopier: the device-side staging path of CudaCopyEngine
// (CopyMethod::kStaged). Each batch goes through one of two device windows
// laid out like its host destination (staging_plan.h):
//
//   copy-out: kernel stream: upload the piece list, then per stage gather
//             launches (planes -> window) and an event; DMA stream: per stage,
//             wait for that event, then one DMA per extent (window -> host).
//   restore:  DMA stream: per stage, one DMA per extent (host -> window) and
//             an event; kernel stream: upload the piece list, then per stage
//             wait for that event and scatter launches (window -> planes).
//   A stage's kernel work is cut into launches of at most launch_bytes.
//
// The kernel stream is the engine's stream, at the least priority; launches
// are serialized on it, so copies never hold more than `blocks` SMs. The DMA
// of one stage (and of the other window's batch) overlaps the kernel of the
// next. A stage with one extent moves with cuMemcpy{DtoH,HtoD}Async, one with
// several with one cuMemcpyBatchAsync when the driver has it. Pieces of at
// least `direct_piece_bytes` skip the window and move by DMA on the DMA stream
// ahead of the batch's extents.
//
// Thread: created, used and destroyed on the engine's transfer thread with
// its context current.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "cuda/driver_api.h"
#include "cuda/gather_kernel.h"
#include "cuda/staging_plan.h"

namespace strata {

enum class RestorePieceList : unsigned char { kUploaded, kMappedHost, kParams };

struct StagedCopierOptions {
  uint32_t blocks = 2;  // SMs the kernel may hold (one block per SM)
  uint32_t threads_per_block = 1024;
  // Window bytes per DMA stage: 8 MiB measured best on the H200 with three
  // batches in flight (fewer DMA calls per batch; docs/performance.md).
  uint64_t stage_bytes = 8ull << 20;
  // Window bytes per kernel launch at most (a stage takes several): a short
  // launch holds its SMs briefly, so a model kernel that wants every SM waits
  // at most that long for the last two (8 MiB launches slowed a
  // bandwidth-bound stand-in by a third; docs/performance.md).
  uint64_t launch_bytes = 1ull << 20;
  uint64_t kernel_piece_bytes = 16ull << 10;
  // Pieces of at least this many bytes move by DMA straight between plane
  // and host, bypassing the window (0: stage every piece; staging_plan.h).
  // 64 KiB: from there one DMA per piece reaches the bus (BENCH.md), and
  // 288 KiB units moved at 0.96-0.98 of it this way against 0.81-0.92 staged.
  uint64_t direct_piece_bytes = 64ull << 10;
  // Priority of the kernel stream (the engine's stream, which the engine
  // creates): kLeast shares the SMs with a runtime's default streams on equal
  // terms; kGreatest lets the bounded kernel's blocks go first.
  StreamPriority kernel_priority = StreamPriority::kLeast;
  // Where a restore's scatter reads its piece list: kUploaded copies it to
  // device memory on the DMA stream ahead of the batch's extents; kMappedHost
  // has the kernel read the pinned list by its host pointer; kParams passes
  // each launch's pieces in its parameters (at most KernelParamPieces::kMax
  // a launch), so the DMA stream carries the extents alone and the kernel
  // reads nothing over PCIe (docs/performance.md).
  RestorePieceList restore_piece_list = RestorePieceList::kParams;
};

class StagedCopier {
 public:
  static constexpr uint32_t kWindows = GatherKernel::kPieceBuffers;

  // Allocates two windows for batches of at most kMaxBatchBytes and
  // kMaxBatchEntries, a DMA stream and the hand-off events, and loads the
  // kernel into the current context. `kernel_stream` stays the caller's.
  static Result<std::unique_ptr<StagedCopier>> Create(std::shared_ptr<const CudaDriver> driver,
                                                      int ordinal, CudaStream kernel_stream,
                                                      const StagedCopierOptions& options);
  ~StagedCopier();
  StagedCopier(const StagedCopier&) = delete;
  StagedCopier& operator=(const StagedCopier&) = delete;

  // Queues `batch` through window `slot` (< kWindows) and returns the stream
  // whose work, once finished, means the batch is done. The caller must have
  // waited for the batch it issued before in `slot`. On error part of the
  // batch may be queued on either stream: Synchronize before reporting it.
  Result<CudaStream> Issue(TransferDirection direction, std::span<const CopyDescriptor> batch,
                           uint32_t slot, CudaCopyArrays& arrays);
  // Waits for the DMA stream (the kernel stream is the caller's to wait for).
  Status SynchronizeDma() const;

 private:
  StagedCopier(std::shared_ptr<const CudaDriver> driver, int ordinal, CudaStream kernel_stream,
               const StagedCopierOptions& options);
  Status Dma(TransferDirection direction, const StagingStage& stage, uint64_t window,
             CudaCopyArrays& arrays);
  // Queues the plan's direct pieces on the DMA stream.
  Status DirectDma(TransferDirection direction, CudaCopyArrays& arrays);
  // Queues the kernel over a stage's pieces in launches of at most
  // launch_bytes each, on the kernel stream.
  Status RunStage(uint32_t slot, const StagingStage& stage, RestorePieceList list);
  // RunStage for kParams: each launch's pieces (window -> planes) in its
  // parameters, cut at launch_bytes and KernelParamPieces::kMax pieces.
  Status RunStageParams(uint64_t window, const StagingStage& stage);
  CudaEvent& handoff(uint32_t slot, size_t stage) {
    return handoff_[slot * stages_per_window_ + stage];
  }

  std::shared_ptr<const CudaDriver> driver_;
  int ordinal_;
  CudaStream kernel_stream_;
  StagedCopierOptions options_;
  StagingLimits limits_;
  size_t stages_per_window_ = 0;
  StagingPlanner planner_;
  std::unique_ptr<GatherKernel> kernel_;
  uint64_t windows_[kWindows] = {};
  CudaStream dma_stream_ = nullptr;
  std::vector<CudaEvent> handoff_;  // kWindows x stages_per_window_
  std::vector<CopyOp> dma_ops_;     // extents of one stage, as batched copies
};

}  // namespace strata
