// CudaCopyEngine: the CopyEngine of one rank's transfer thread on a CUDA
// device (seed 2.5). Start makes the device's primary context current on the
// thread and creates one stream at the least priority and one blocking-sync
// event; CopyBatch issues the batch, records the event and sleeps on it, and
// reports an error only after the stream has drained, so destination ids are
// quiescent whenever a failure is seen.
//
// How a batch is issued (CopyMethod), all on the same stream:
//  - kBatched: one cuMemcpyBatchAsync of 1-D copies (copy engines; default).
//  - kStrided: runs at constant strides as one cuMemcpy3DBatchAsync of 2-D
//    copies, the rest as one cuMemcpyBatchAsync (copy engines).
//  - kKernel: one launch of a small gather/scatter kernel that moves every
//    piece over mapped host memory (SMs; needs the kernel built with nvcc).
// docs/performance.md discusses the trade-off.
#pragma once

#include <memory>
#include <string_view>

#include "cuda/copy_plan.h"
#include "cuda/driver_api.h"
#include "store/copy_engine.h"

namespace strata {

enum class CopyMethod : unsigned char { kBatched, kStrided, kKernel };
inline constexpr CopyMethod kDefaultCopyMethod = CopyMethod::kBatched;

std::string_view CopyMethodName(CopyMethod method);
// "batched", "strided" or "kernel".
Result<CopyMethod> ParseCopyMethod(std::string_view name);

struct CudaEngineOptions {
  int device_ordinal = 0;
  CopyMethod method = kDefaultCopyMethod;
  uint32_t kernel_blocks = 32;  // thread blocks per kernel launch (kKernel only)
};

class GatherKernel;

class CudaCopyEngine final : public CopyEngine {
 public:
  CudaCopyEngine(std::shared_ptr<const CudaDriver> driver, CudaEngineOptions options);
  // Releases what Start acquired if Stop was never called.
  ~CudaCopyEngine() override;

  Status Start() override;
  Status CopyBatch(TransferDirection direction, std::span<const CopyDescriptor> batch) override;
  void Stop() override;

 private:
  Status Acquire();
  Status Issue(TransferDirection direction, std::span<const CopyDescriptor> batch);
  Status Drain();
  void Release();

  std::shared_ptr<const CudaDriver> driver_;
  CudaEngineOptions options_;
  CudaContext context_ = nullptr;
  bool retained_ = false;
  CudaStream stream_ = nullptr;
  CudaEvent event_ = nullptr;
  CopyPlanLimits limits_;
  CopyPlanner planner_;
  std::unique_ptr<CudaCopyArrays> arrays_;
  std::unique_ptr<GatherKernel> kernel_;
};

}  // namespace strata
