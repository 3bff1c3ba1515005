#include "cuda/cuda_copy_engine.h"

#include "cuda/gather_kernel.h"

namespace strata {

std::string_view CopyMethodName(CopyMethod method) {
  switch (method) {
    case CopyMethod::kBatched: return "batched";
    case CopyMethod::kStrided: return "strided";
    case CopyMethod::kKernel: return "kernel";
    case CopyMethod::kStaged: return "staged";
  }
  return "unknown";
}

CopyMethod DefaultCopyMethod() {
  return GatherKernelBuilt() ? CopyMethod::kStaged : CopyMethod::kBatched;
}

Result<CopyMethod> ParseCopyMethod(std::string_view name) {
  for (CopyMethod m :
       {CopyMethod::kBatched, CopyMethod::kStrided, CopyMethod::kKernel, CopyMethod::kStaged}) {
    if (CopyMethodName(m) == name) return m;
  }
  return Status::InvalidArgument("unknown copy method '" + std::string(name) +
                                 "' (batched, strided, kernel, staged)");
}

CudaCopyEngine::CudaCopyEngine(std::shared_ptr<const CudaDriver> driver, CudaEngineOptions options)
    : driver_(std::move(driver)), options_(options) {}

CudaCopyEngine::~CudaCopyEngine() { Release(); }

Status CudaCopyEngine::Start() {
  Status s = Acquire();
  if (!s.ok()) {
    Release();
    return s.WithContext("CUDA device " + std::to_string(options_.device_ordinal));
  }
  return s;
}

Status CudaCopyEngine::Acquire() {
  const CudaDriver& d = *driver_;
  const int ordinal = options_.device_ordinal;
  STRATA_ASSIGN_OR_RETURN(context_, d.RetainPrimaryContext(ordinal));
  retained_ = true;
  STRATA_RETURN_IF_ERROR(d.SetCurrentContext(context_));
  if (options_.batches_in_flight == 0 || options_.batches_in_flight > kMaxBatchesInFlight) {
    return Status::InvalidArgument("batches in flight must be 1.." +
                                   std::to_string(kMaxBatchesInFlight));
  }
  STRATA_ASSIGN_OR_RETURN(stream_, d.CreateStream(options_.method == CopyMethod::kStaged
                                                      ? options_.staged.kernel_priority
                                                      : StreamPriority::kLeast));
  for (CudaEvent& e : events_) {
    STRATA_ASSIGN_OR_RETURN(e, d.CreateBlockingEvent());
  }
  STRATA_ASSIGN_OR_RETURN(int max_pitch,
                          d.DeviceAttribute(ordinal, CudaDeviceAttribute::kMaxPitch));
  limits_.max_pitch_bytes = max_pitch > 0 ? static_cast<uint64_t>(max_pitch) : 0;
  arrays_ = std::make_unique<CudaCopyArrays>(kMaxBatchEntries);
  const std::string need_13 =
      " needs a CUDA 13.0 driver (580 or newer); this one reports " + std::to_string(d.version());
  switch (options_.method) {
    case CopyMethod::kStrided:
      if (!d.has_batch_copy_3d())
        return Status::FailedPrecondition("cuMemcpy3DBatchAsync" + need_13);
      [[fallthrough]];
    case CopyMethod::kBatched:
      if (!d.has_batch_copy()) return Status::FailedPrecondition("cuMemcpyBatchAsync" + need_13);
      break;
    case CopyMethod::kKernel: {
      KernelShape shape;
      shape.blocks = options_.kernel_blocks;
      STRATA_ASSIGN_OR_RETURN(kernel_, GatherKernel::Load(driver_, ordinal, shape));
      break;
    }
    case CopyMethod::kStaged:
      STRATA_ASSIGN_OR_RETURN(staged_,
                              StagedCopier::Create(driver_, ordinal, stream_, options_.staged));
      break;
  }
  return Status::Ok();
}

Status CudaCopyEngine::CopyBatch(TransferDirection direction,
                                 std::span<const CopyDescriptor> batch) {
  if (in_flight() == options_.batches_in_flight) {
    Status waited = WaitOldest();
    if (!waited.ok()) {
      DrainAfterError();
      return waited;
    }
  }
  const auto slot = static_cast<uint32_t>(issued_ % kMaxBatchesInFlight);
  Result<CudaStream> done_on = Issue(direction, batch, slot);
  Status issued = done_on.status();
  if (issued.ok()) issued = driver_->RecordEvent(events_[slot], *done_on);
  if (!issued.ok()) {
    // Part of the batch may be queued: drain before anyone sees the failure.
    DrainAfterError();
    return issued;
  }
  ++issued_;
  return options_.batches_in_flight == 1 ? Drain() : Status::Ok();
}

Status CudaCopyEngine::Drain() {
  while (in_flight() > 0) {
    Status waited = WaitOldest();
    if (!waited.ok()) {
      DrainAfterError();
      return waited;
    }
  }
  return Status::Ok();
}

Status CudaCopyEngine::WaitOldest() {
  const auto slot = static_cast<uint32_t>(waited_ % kMaxBatchesInFlight);
  ++waited_;
  return driver_->SynchronizeEvent(events_[slot]);
}

void CudaCopyEngine::DrainAfterError() {
  (void)driver_->SynchronizeStream(stream_);
  if (staged_ != nullptr) (void)staged_->SynchronizeDma();
  waited_ = issued_;
}

Result<CudaStream> CudaCopyEngine::Issue(TransferDirection direction,
                                         std::span<const CopyDescriptor> batch, uint32_t slot) {
  const CudaDriver& d = *driver_;
  const int ordinal = options_.device_ordinal;
  switch (options_.method) {
    case CopyMethod::kBatched:
      planner_.Plan(batch, CopyShape::kLinear, limits_);
      STRATA_RETURN_IF_ERROR(
          d.BatchCopyAsync(direction, ordinal, planner_.linear(), *arrays_, stream_));
      return stream_;
    case CopyMethod::kStrided:
      planner_.Plan(batch, CopyShape::kStrided, limits_);
      STRATA_RETURN_IF_ERROR(
          d.BatchCopy2DAsync(direction, ordinal, planner_.strided(), *arrays_, stream_));
      STRATA_RETURN_IF_ERROR(
          d.BatchCopyAsync(direction, ordinal, planner_.linear(), *arrays_, stream_));
      return stream_;
    case CopyMethod::kKernel:
      planner_.Plan(batch, CopyShape::kLinear, limits_);
      STRATA_RETURN_IF_ERROR(kernel_->Launch(direction, planner_.linear(), slot, stream_));
      return stream_;
    case CopyMethod::kStaged: return staged_->Issue(direction, batch, slot, *arrays_);
  }
  return Status::Internal("unknown copy method");
}

void CudaCopyEngine::Stop() { Release(); }

void CudaCopyEngine::Release() {
  if (stream_ != nullptr && in_flight() > 0) DrainAfterError();
  kernel_.reset();
  staged_.reset();
  for (CudaEvent& e : events_) {
    if (e != nullptr) (void)driver_->DestroyEvent(e);
    e = nullptr;
  }
  if (stream_ != nullptr) (void)driver_->DestroyStream(stream_);
  stream_ = nullptr;
  if (retained_) {
    (void)driver_->SetCurrentContext(nullptr);
    (void)driver_->ReleasePrimaryContext(options_.device_ordinal);
  }
  retained_ = false;
  context_ = nullptr;
}

}  // namespace strata
