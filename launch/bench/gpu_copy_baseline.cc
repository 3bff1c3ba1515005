#include "launch/bench/gpu_copy_baseline.h"

#include <chrono>
#include <cstring>

namespace strata {

Result<std::unique_ptr<GpuCopyBaseline>> GpuCopyBaseline::Open(int ordinal, uint64_t buffer_bytes) {
  std::unique_ptr<GpuCopyBaseline> b(new GpuCopyBaseline());
  STRATA_ASSIGN_OR_RETURN(b->driver_, CudaDriver::Load());
  STRATA_ASSIGN_OR_RETURN(b->context_, PrimaryContext::Retain(b->driver_, ordinal));
  const CudaDriver& d = *b->driver_;
  ContextGuard guard(d, b->context_->get());
  STRATA_RETURN_IF_ERROR(guard.status());
  b->buffer_bytes_ = buffer_bytes;
  STRATA_ASSIGN_OR_RETURN(b->device_, d.MemAlloc(buffer_bytes));
  STRATA_ASSIGN_OR_RETURN(b->host_, d.MemAllocHost(buffer_bytes));
  std::memset(b->host_, 0x5a, buffer_bytes);
  STRATA_RETURN_IF_ERROR(d.MemsetD8(b->device_, 0xa5, buffer_bytes));
  STRATA_ASSIGN_OR_RETURN(b->stream_, d.CreateLowestPriorityStream());
  return b;
}

GpuCopyBaseline::~GpuCopyBaseline() {
  if (context_ == nullptr) return;
  const CudaDriver& d = *driver_;
  ContextGuard guard(d, context_->get());
  if (stream_ != nullptr) (void)d.DestroyStream(stream_);
  if (host_ != nullptr) (void)d.MemFreeHost(host_);
  if (device_ != 0) (void)d.MemFree(device_);
}

Result<double> GpuCopyBaseline::Copy(TransferDirection direction, uint64_t bytes) {
  const CudaDriver& d = *driver_;
  ContextGuard guard(d, context_->get());
  STRATA_RETURN_IF_ERROR(guard.status());
  const auto start = std::chrono::steady_clock::now();
  Status s;
  for (uint64_t done = 0; done < bytes && s.ok();) {
    const uint64_t n = std::min(buffer_bytes_, bytes - done);
    s = d.CopyAsync(direction, device_, host_, n, stream_);
    done += n;
  }
  Status synced = d.SynchronizeStream(stream_);
  STRATA_RETURN_IF_ERROR(s);
  STRATA_RETURN_IF_ERROR(synced);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace strata
