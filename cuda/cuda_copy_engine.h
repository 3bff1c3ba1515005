// CudaCopyEngine: the CopyEngine of one rank's transfer thread on a CUDA
// device (seed 2.5). Start makes the device's primary context current on the
// thread and creates one stream at the least priority and blocking-sync
// events; CopyBatch issues the batch, records an event and sleeps on it, and
// reports an error only after the stream has drained, so destination ids are
// quiescent whenever a failure is seen. With batches_in_flight = 2, CopyBatch
// returns once its batch is queued and waits for the batch before it instead,
// so the copy engines never idle while the thread builds the next batch; at
// most two bounded batches are then queued (docs/performance.md).
//
// How a batch is issued (CopyMethod), all on the same stream:
//  - kBatched: one cuMemcpyBatchAsync of 1-D copies (copy engines; default).
//  - kStrided: runs at constant strides as one cuMemcpy3DBatchAsync of 2-D
//    copies, the rest as one cuMemcpyBatchAsync (copy engines).
//  - kKernel: one launch of a small gather/scatter kernel that moves every
//    piece over mapped host memory (SMs; needs the kernel built with nvcc).
//  - kStaged: a bounded kernel (staged_blocks SMs) packs the pieces into a
//    device window laid out like the host destination, and contiguous DMAs
//    move the window (staged_copier.h; needs the kernel built with nvcc).
//    The kernel runs on this stream, the DMAs on a second one.
// docs/performance.md discusses the trade-off.
#pragma once

#include <memory>
#include <string_view>

#include "cuda/copy_plan.h"
#include "cuda/driver_api.h"
#include "cuda/staged_copier.h"
#include "store/transfer/copy_engine.h"

namespace strata {

enum class CopyMethod : unsigned char { kBatched, kStrided, kKernel, kStaged };
// The default method: kStaged where this build carries the kernel (it
// reaches the PCIe limit for every plane size on 2 SMs, docs/performance.md),
// else kBatched.
CopyMethod DefaultCopyMethod();
inline constexpr uint32_t kMaxBatchesInFlight = 3;

std::string_view CopyMethodName(CopyMethod method);
// "batched", "strided", "kernel" or "staged".
Result<CopyMethod> ParseCopyMethod(std::string_view name);

struct CudaEngineOptions {
  int device_ordinal = 0;
  CopyMethod method = DefaultCopyMethod();
  uint32_t batches_in_flight = 1;  // 1 .. kMaxBatchesInFlight
  uint32_t kernel_blocks = 32;     // thread blocks per kernel launch (kKernel only)
  StagedCopierOptions staged;      // kStaged only
};

class GatherKernel;

class CudaCopyEngine final : public CopyEngine {
 public:
  CudaCopyEngine(std::shared_ptr<const CudaDriver> driver, CudaEngineOptions options);
  // Releases what Start acquired if Stop was never called.
  ~CudaCopyEngine() override;

  Status Start() override;
  Status CopyBatch(TransferDirection direction, std::span<const CopyDescriptor> batch) override;
  Status Drain() override;
  uint64_t batches_in_flight() const override { return in_flight(); }
  void Stop() override;

 private:
  Status Acquire();
  // Queues `batch`; returns the stream whose completion marks it done.
  Result<CudaStream> Issue(TransferDirection direction, std::span<const CopyDescriptor> batch,
                           uint32_t slot);
  uint64_t in_flight() const { return issued_ - waited_; }
  Status WaitOldest();
  // After an error: waits for the whole stream and forgets what was in flight.
  void DrainAfterError();
  void Release();

  std::shared_ptr<const CudaDriver> driver_;
  CudaEngineOptions options_;
  CudaContext context_ = nullptr;
  bool retained_ = false;
  CudaStream stream_ = nullptr;
  CudaEvent events_[kMaxBatchesInFlight] = {};
  uint64_t issued_ = 0;  // batches issued; batch i used events_[i % kMaxBatchesInFlight]
  uint64_t waited_ = 0;  // batches waited for
  CopyPlanLimits limits_;
  CopyPlanner planner_;
  std::unique_ptr<CudaCopyArrays> arrays_;
  std::unique_ptr<GatherKernel> kernel_;
  std::unique_ptr<StagedCopier> staged_;
};

}  // namespace strata
