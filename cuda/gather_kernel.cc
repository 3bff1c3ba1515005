#include "cuda/gather_kernel.h"

#include <algorithm>

namespace strata {

#if STRATA_HAVE_GATHER_KERNEL
extern const char kGatherKernelPtx[];  // generated from gather_kernel.cu
#endif

namespace {
constexpr const char* kKernelName = "strata_copy_pieces";
constexpr uint32_t kThreadsPerBlock = 256;
}  // namespace

// Must match StrataPieceCopy in gather_kernel.cu.
struct GatherKernel::PieceCopy {
  uint64_t src;
  uint64_t dst;
  uint64_t bytes;
};

bool GatherKernelBuilt() { return STRATA_HAVE_GATHER_KERNEL != 0; }

Result<std::unique_ptr<GatherKernel>> GatherKernel::Load(
    const std::shared_ptr<const CudaDriver>& driver, int ordinal, uint32_t blocks) {
#if STRATA_HAVE_GATHER_KERNEL
  if (blocks == 0) return Status::InvalidArgument("gather kernel needs at least one block");
  STRATA_ASSIGN_OR_RETURN(
      int host_pointers,
      driver->DeviceAttribute(ordinal, CudaDeviceAttribute::kHostPointerForRegisteredMemory));
  if (host_pointers == 0) {
    return Status::FailedPrecondition(
        "the gather kernel needs a device that addresses registered host memory by its host "
        "pointer");
  }
  std::unique_ptr<GatherKernel> k(new GatherKernel(driver, blocks));
  STRATA_ASSIGN_OR_RETURN(k->module_, driver->LoadModule(kGatherKernelPtx));
  STRATA_ASSIGN_OR_RETURN(k->function_, driver->GetFunction(k->module_, kKernelName));
  STRATA_ASSIGN_OR_RETURN(
      void* pieces, driver->MemAllocHost(sizeof(PieceCopy) * kMaxBatchEntries * kPieceBuffers));
  k->pieces_ = static_cast<PieceCopy*>(pieces);
  STRATA_ASSIGN_OR_RETURN(k->device_pieces_,
                          driver->MemAlloc(sizeof(PieceCopy) * kMaxBatchEntries * kPieceBuffers));
  return k;
#else
  (void)driver;
  (void)ordinal;
  (void)blocks;
  return Status::FailedPrecondition(
      "the gather kernel was not built (nvcc was not found at build time)");
#endif
}

GatherKernel::~GatherKernel() {
  if (device_pieces_ != 0) (void)driver_->MemFree(device_pieces_);
  if (pieces_ != nullptr) (void)driver_->MemFreeHost(pieces_);
  if (module_ != nullptr) (void)driver_->UnloadModule(module_);
}

Status GatherKernel::Launch(TransferDirection direction, std::span<const CopyOp> ops,
                            uint32_t buffer, CudaStream stream) {
  if (ops.empty()) return Status::Ok();
  STRATA_ASSERT(buffer < kPieceBuffers, "gather kernel piece buffer out of range");
  PieceCopy* pieces = pieces_ + buffer * kMaxBatchEntries;
  uint64_t device_pieces = device_pieces_ + buffer * kMaxBatchEntries * sizeof(PieceCopy);
  if (ops.size() > kMaxBatchEntries) {
    return Status::InvalidArgument("gather kernel batch of " + std::to_string(ops.size()) +
                                   " pieces exceeds " + std::to_string(kMaxBatchEntries));
  }
  const bool to_host = direction == TransferDirection::kDeviceToHost;
  for (size_t i = 0; i < ops.size(); ++i) {
    STRATA_ASSERT(ops[i].height == 1, "the gather kernel takes 1-D copies");
    const auto host = reinterpret_cast<uint64_t>(ops[i].host);
    pieces[i] = {to_host ? ops[i].device : host, to_host ? host : ops[i].device, ops[i].width};
  }
  auto count = static_cast<uint32_t>(ops.size());
  STRATA_RETURN_IF_ERROR(driver_->CopyAsync(TransferDirection::kHostToDevice, device_pieces, pieces,
                                            sizeof(PieceCopy) * count, stream));
  void* params[] = {&device_pieces, &count};
  const uint32_t warps_per_block = kThreadsPerBlock / 32;
  const uint32_t grid =
      std::min<uint32_t>(blocks_, (count + warps_per_block - 1) / warps_per_block);
  return driver_->LaunchKernel(function_, grid, kThreadsPerBlock, params, stream);
}

}  // namespace strata
