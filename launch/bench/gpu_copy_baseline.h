// The PCIe limit beside `strata bench store --gpu N`: the same bytes moved by
// plain contiguous copies between one device buffer and one pinned host
// buffer (cuMemcpyDtoHAsync / cuMemcpyHtoDAsync, back to back on one stream),
// measured in the same run as the store paths.
#pragma once

#include <memory>

#include "cuda/driver_api.h"

namespace strata {

class GpuCopyBaseline {
 public:
  // Loads the driver and takes `buffer_bytes` of device and pinned host
  // memory on device `ordinal`.
  static Result<std::unique_ptr<GpuCopyBaseline>> Open(int ordinal, uint64_t buffer_bytes);
  ~GpuCopyBaseline();
  GpuCopyBaseline(const GpuCopyBaseline&) = delete;
  GpuCopyBaseline& operator=(const GpuCopyBaseline&) = delete;

  // Seconds to move `bytes` in `direction`, buffer-sized copies queued back
  // to back, from the first issue to the last completion.
  Result<double> Copy(TransferDirection direction, uint64_t bytes);

 private:
  GpuCopyBaseline() = default;
  std::shared_ptr<const CudaDriver> driver_;
  std::unique_ptr<PrimaryContext> context_;
  uint64_t buffer_bytes_ = 0;
  uint64_t device_ = 0;
  void* host_ = nullptr;
  CudaStream stream_ = nullptr;
};

}  // namespace strata
