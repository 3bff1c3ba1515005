#include "cuda/gather_kernel.h"

#include <algorithm>

namespace strata {

#if STRATA_HAVE_GATHER_KERNEL
extern const char kGatherKernelPtx[];  // generated from gather_kernel.cu
#endif

namespace {
constexpr const char* kKernelName = "strata_copy_pieces";
constexpr const char* kParamKernelName = "strata_scatter_param_pieces";
}  // namespace

static_assert(sizeof(KernelPiece) == 24, "KernelPiece must match StrataPieceCopy");
static_assert(sizeof(KernelParamPiece) == 16, "KernelParamPiece must match StrataParamPiece");
static_assert(sizeof(KernelParamPieces) <= 4096, "a launch's parameters fit in 4 KiB");

bool GatherKernelBuilt() { return STRATA_HAVE_GATHER_KERNEL != 0; }

Result<std::unique_ptr<GatherKernel>> GatherKernel::Load(
    const std::shared_ptr<const CudaDriver>& driver, int ordinal, const KernelShape& shape) {
#if STRATA_HAVE_GATHER_KERNEL
  if (shape.blocks == 0) return Status::InvalidArgument("gather kernel needs at least one block");
  if (shape.threads_per_block == 0 || shape.threads_per_block % 32 != 0 ||
      shape.threads_per_block > 1024 || shape.pieces_per_buffer == 0) {
    return Status::InvalidArgument(
        "gather kernel threads per block must be a multiple of 32 up "
        "to 1024, with a non-empty piece list");
  }
  if (shape.host_access == KernelHostAccess::kMappedHost) {
    STRATA_ASSIGN_OR_RETURN(
        int host_pointers,
        driver->DeviceAttribute(ordinal, CudaDeviceAttribute::kHostPointerForRegisteredMemory));
    if (host_pointers == 0) {
      return Status::FailedPrecondition(
          "the gather kernel needs a device that addresses registered host memory by its host "
          "pointer");
    }
  }
  std::unique_ptr<GatherKernel> k(new GatherKernel(driver, shape));
  const uint64_t list_bytes = sizeof(KernelPiece) * shape.pieces_per_buffer * kPieceBuffers;
  STRATA_ASSIGN_OR_RETURN(k->module_, driver->LoadModule(kGatherKernelPtx));
  STRATA_ASSIGN_OR_RETURN(k->function_, driver->GetFunction(k->module_, kKernelName));
  STRATA_ASSIGN_OR_RETURN(k->param_function_, driver->GetFunction(k->module_, kParamKernelName));
  STRATA_ASSIGN_OR_RETURN(void* pieces, driver->MemAllocHost(list_bytes));
  k->pieces_ = static_cast<KernelPiece*>(pieces);
  STRATA_ASSIGN_OR_RETURN(k->device_pieces_, driver->MemAlloc(list_bytes));
  return k;
#else
  (void)driver;
  (void)ordinal;
  (void)shape;
  return Status::FailedPrecondition(
      "the gather kernel was not built (nvcc was not found at build time)");
#endif
}

GatherKernel::~GatherKernel() {
  if (device_pieces_ != 0) (void)driver_->MemFree(device_pieces_);
  if (pieces_ != nullptr) (void)driver_->MemFreeHost(pieces_);
  if (module_ != nullptr) (void)driver_->UnloadModule(module_);
}

KernelPiece* GatherKernel::pieces(uint32_t buffer) {
  STRATA_ASSERT(buffer < kPieceBuffers, "gather kernel piece buffer out of range");
  return pieces_ + buffer * shape_.pieces_per_buffer;
}

Status GatherKernel::Upload(uint32_t buffer, uint64_t count, CudaStream stream) {
  STRATA_ASSERT(buffer < kPieceBuffers && count <= shape_.pieces_per_buffer,
                "gather kernel upload out of range");
  if (count == 0) return Status::Ok();
  const uint64_t device = device_pieces_ + buffer * shape_.pieces_per_buffer * sizeof(KernelPiece);
  return driver_->CopyAsync(TransferDirection::kHostToDevice, device, pieces(buffer),
                            sizeof(KernelPiece) * count, stream);
}

Status GatherKernel::Run(uint32_t buffer, uint64_t first, uint64_t count, CudaStream stream) {
  STRATA_ASSERT(buffer < kPieceBuffers && first + count <= shape_.pieces_per_buffer,
                "gather kernel launch out of range");
  return LaunchOver(
      device_pieces_ + (buffer * shape_.pieces_per_buffer + first) * sizeof(KernelPiece), count,
      stream);
}

Status GatherKernel::RunFromHost(uint32_t buffer, uint64_t first, uint64_t count,
                                 CudaStream stream) {
  STRATA_ASSERT(buffer < kPieceBuffers && first + count <= shape_.pieces_per_buffer,
                "gather kernel launch out of range");
  return LaunchOver(reinterpret_cast<uint64_t>(pieces(buffer) + first), count, stream);
}

Status GatherKernel::RunParams(const KernelParamPieces& pieces, CudaStream stream) {
  STRATA_ASSERT(pieces.count <= KernelParamPieces::kMax, "too many pieces for one launch");
  if (pieces.count == 0) return Status::Ok();
  void* params[] = {const_cast<KernelParamPieces*>(&pieces)};
  const uint32_t warps_per_block = shape_.threads_per_block / 32;
  const uint32_t grid =
      std::min<uint32_t>(shape_.blocks, (pieces.count + warps_per_block - 1) / warps_per_block);
  return driver_->LaunchKernel(param_function_, grid, shape_.threads_per_block, params, stream);
}

Status GatherKernel::LaunchOver(uint64_t list, uint64_t count, CudaStream stream) {
  if (count == 0) return Status::Ok();
  auto n = static_cast<uint32_t>(count);
  void* params[] = {&list, &n};
  const uint32_t warps_per_block = shape_.threads_per_block / 32;
  const uint32_t grid =
      std::min<uint32_t>(shape_.blocks, (n + warps_per_block - 1) / warps_per_block);
  return driver_->LaunchKernel(function_, grid, shape_.threads_per_block, params, stream);
}

Status GatherKernel::Launch(TransferDirection direction, std::span<const CopyOp> ops,
                            uint32_t buffer, CudaStream stream) {
  if (ops.empty()) return Status::Ok();
  if (ops.size() > shape_.pieces_per_buffer) {
    return Status::InvalidArgument("gather kernel batch of " + std::to_string(ops.size()) +
                                   " pieces exceeds " + std::to_string(shape_.pieces_per_buffer));
  }
  KernelPiece* list = pieces(buffer);
  const bool to_host = direction == TransferDirection::kDeviceToHost;
  for (size_t i = 0; i < ops.size(); ++i) {
    STRATA_ASSERT(ops[i].height == 1, "the gather kernel takes 1-D copies");
    const auto host = reinterpret_cast<uint64_t>(ops[i].host);
    list[i] = {to_host ? ops[i].device : host, to_host ? host : ops[i].device, ops[i].width};
  }
  STRATA_RETURN_IF_ERROR(Upload(buffer, ops.size(), stream));
  return Run(buffer, 0, ops.size(), stream);
}

}  // namespace strata
