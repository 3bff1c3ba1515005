// GatherKernel: the SM copy kernel (gather_kernel.cu) loaded into one
// context, with pinned and device piece lists.
//
//  - CopyMethod::kKernel: Launch copies every piece of a batch between device
//    memory and registered host memory through the device mapping of that
//    memory, so scattered small pieces cost no per-copy engine overhead, at
//    the price of SM time shared with the model (docs/performance.md).
//  - CopyMethod::kStaged: the staged copier fills a piece list (device to
//    device: planes <-> staging window), uploads it once per batch and runs
//    the kernel once per stage.
//
// The piece list travels to device memory with one small copy ahead of the
// launch, so warps read it from L2, not over PCIe.
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

// One kernel task; must match StrataPieceCopy in gather_kernel.cu.
struct KernelPiece {
  uint64_t src = 0;
  uint64_t dst = 0;
  uint64_t bytes = 0;
};

// One piece of a scatter whose list travels in the launch's parameters
// (strata_scatter_param_pieces): `bytes` from window + window_offset to the
// device address `device`. Must match StrataParamPiece in gather_kernel.cu.
struct KernelParamPiece {
  uint64_t device = 0;
  uint32_t window_offset = 0;
  uint32_t bytes = 0;
};

// The launch's whole parameter block (4 KiB at most, the classic limit).
struct KernelParamPieces {
  static constexpr uint32_t kMax = 254;
  uint64_t window = 0;
  uint32_t count = 0;
  uint32_t unused = 0;
  KernelParamPiece pieces[kMax];
};

// Whether the kernel's pieces address registered host memory (kKernel) or
// only device memory (kStaged).
enum class KernelHostAccess : unsigned char { kMappedHost, kDeviceOnly };

struct KernelShape {
  uint32_t blocks = 32;              // thread blocks per launch (at most; fewer for few pieces)
  uint32_t threads_per_block = 256;  // a multiple of 32, at most 1024
  uint64_t pieces_per_buffer = kMaxBatchEntries;
  KernelHostAccess host_access = KernelHostAccess::kMappedHost;
};

class GatherKernel {
 public:
  // Loads the kernel into the current context. kFailedPrecondition when the
  // build has no kernel, or kMappedHost is asked of a device that cannot
  // address registered host memory by its host pointer.
  static Result<std::unique_ptr<GatherKernel>> Load(const std::shared_ptr<const CudaDriver>& driver,
                                                    int ordinal, const KernelShape& shape);
  ~GatherKernel();
  GatherKernel(const GatherKernel&) = delete;
  GatherKernel& operator=(const GatherKernel&) = delete;

  static constexpr uint32_t kPieceBuffers = 3;  // one per batch in flight

  // The pinned piece list of `buffer` (< kPieceBuffers), shape.pieces_per_buffer
  // long. The caller fills it only when no launch of that buffer is in flight.
  KernelPiece* pieces(uint32_t buffer);
  uint64_t capacity() const { return shape_.pieces_per_buffer; }
  // Queues the copy of the first `count` pieces of `buffer` to its device twin.
  Status Upload(uint32_t buffer, uint64_t count, CudaStream stream);
  // Queues one launch over uploaded pieces [first, first + count) of `buffer`.
  Status Run(uint32_t buffer, uint64_t first, uint64_t count, CudaStream stream);
  // The same launch reading the pieces from the pinned list itself, by its
  // host pointer (no upload; the device must address pinned host memory,
  // as every UVA device does). The list must stay unchanged until it ends.
  Status RunFromHost(uint32_t buffer, uint64_t first, uint64_t count, CudaStream stream);

  // One scatter launch over `pieces` (window -> device), its list in the
  // launch's parameters: no upload, no piece buffer.
  Status RunParams(const KernelParamPieces& pieces, CudaStream stream);

  // kKernel: fills `buffer` from 1-D `ops` (at most capacity()), uploads and
  // launches once. The buffer stays in use until the launch finishes: the
  // caller waits for it before launching with the same buffer again.
  Status Launch(TransferDirection direction, std::span<const CopyOp> ops, uint32_t buffer,
                CudaStream stream);

 private:
  // One launch over `count` pieces listed at `list` (a device address).
  Status LaunchOver(uint64_t list, uint64_t count, CudaStream stream);
  GatherKernel(std::shared_ptr<const CudaDriver> driver, const KernelShape& shape)
      : driver_(std::move(driver)), shape_(shape) {}
  std::shared_ptr<const CudaDriver> driver_;
  KernelShape shape_;
  CudaModule module_ = nullptr;
  CudaFunction function_ = nullptr;
  CudaFunction param_function_ = nullptr;  // strata_scatter_param_pieces
  KernelPiece* pieces_ = nullptr;          // pinned host; kPieceBuffers x pieces_per_buffer
  uint64_t device_pieces_ = 0;             // device memory of the same shape
};

}  // namespace strata
