// GpuRecordChecksums: the DeviceRecordChecksums of one GPU (seed 2.6) over
// RecordChecksumKernel (cuda/record_checksum_kernel.h): one launch per
// Compute, hashing every record of the call in parallel, bit-identical to
// the host's checksums. Every piece of a record must be readable from the
// kernel's device (its own memory, or a peer's with peer access enabled).
//
// Thread: the direct transport's worker; each call makes `context` current
// for its duration (ContextGuard).
#pragma once

#include <memory>

#include "cuda/driver_api.h"
#include "cuda/record_checksum_kernel.h"
#include "store/tier/device_record_checksums.h"

namespace strata {

class GpuRecordChecksums final : public DeviceRecordChecksums {
 public:
  // Loads the kernel into `context` (the primary context of `ordinal`).
  // kFailedPrecondition when this build has no kernel.
  static Result<std::unique_ptr<GpuRecordChecksums>> Load(std::shared_ptr<const CudaDriver> driver,
                                                          CudaContext context, int ordinal);
  ~GpuRecordChecksums() override;
  GpuRecordChecksums(const GpuRecordChecksums&) = delete;
  GpuRecordChecksums& operator=(const GpuRecordChecksums&) = delete;

  Result<std::vector<uint64_t>> Compute(std::span<const DeviceChecksumRecord> records) override;

 private:
  GpuRecordChecksums(std::shared_ptr<const CudaDriver> driver, CudaContext context,
                     std::unique_ptr<RecordChecksumKernel> kernel)
      : driver_(std::move(driver)), context_(context), kernel_(std::move(kernel)) {}
  std::shared_ptr<const CudaDriver> driver_;
  CudaContext context_;
  std::unique_ptr<RecordChecksumKernel> kernel_;
};

}  // namespace strata
