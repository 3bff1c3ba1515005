// GatherKernel: the SM copy path of CudaCopyEngine (CopyMethod::kKernel). One
// launch per batch copies every piece between device memory and registered
// host memory through the device mapping of that memory, so scattered small
// pieces cost no per-copy engine overhead, at the price of SM time shared with
// the model (docs/performance.md). The piece list travels to device memory
// with one small copy ahead of the launch, so warps read it from L2, not over
// PCIe.
//
// Thread: created, used and destroyed on one transfer thread with its context
// current.
#pragma once

#include <memory>
#include <span>

#include "cuda/copy_plan.h"
#include "cuda/driver_api.h"

namespace strata {

// Whether this build carries the kernel (nvcc was found at build time).
bool GatherKernelBuilt();

class GatherKernel {
 public:
  // Loads the kernel into the current context. kFailedPrecondition when the
  // build has no kernel or the device cannot address registered host memory
  // by its host pointer.
  static Result<std::unique_ptr<GatherKernel>> Load(const std::shared_ptr<const CudaDriver>& driver,
                                                    int ordinal, uint32_t blocks);
  ~GatherKernel();
  GatherKernel(const GatherKernel&) = delete;
  GatherKernel& operator=(const GatherKernel&) = delete;

  // Launches one kernel over 1-D `ops` (at most kMaxBatchEntries) on `stream`,
  // after copying the piece list from pinned buffer `buffer` (< kPieceBuffers)
  // to its device twin. Both stay in use until the launch finishes: the
  // caller waits for it before launching with the same buffer again.
  Status Launch(TransferDirection direction, std::span<const CopyOp> ops, uint32_t buffer,
                CudaStream stream);
  static constexpr uint32_t kPieceBuffers = 2;

 private:
  GatherKernel(std::shared_ptr<const CudaDriver> driver, uint32_t blocks)
      : driver_(std::move(driver)), blocks_(blocks) {}
  struct PieceCopy;
  std::shared_ptr<const CudaDriver> driver_;
  uint32_t blocks_;
  CudaModule module_ = nullptr;
  CudaFunction function_ = nullptr;
  PieceCopy* pieces_ = nullptr;  // pinned host; kPieceBuffers x kMaxBatchEntries
  uint64_t device_pieces_ = 0;   // device memory of the same shape
};

}  // namespace strata
