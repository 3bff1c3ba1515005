#include "cuda/device_record_checksums_kernel.h"

namespace strata {

Result<std::unique_ptr<GpuRecordChecksums>> GpuRecordChecksums::Load(
    std::shared_ptr<const CudaDriver> driver, CudaContext context, int ordinal) {
  ContextGuard guard(*driver, context);
  if (!guard.status().ok()) return guard.status();
  Result<std::unique_ptr<RecordChecksumKernel>> kernel =
      RecordChecksumKernel::Load(driver, ordinal);
  if (!kernel.ok()) return kernel.status();
  return std::unique_ptr<GpuRecordChecksums>(
      new GpuRecordChecksums(std::move(driver), context, std::move(*kernel)));
}

GpuRecordChecksums::~GpuRecordChecksums() {
  // The module is unloaded by the kernel's destructor, in its context.
  ContextGuard guard(*driver_, context_);
  kernel_.reset();
}

Result<std::vector<uint64_t>> GpuRecordChecksums::Compute(
    std::span<const DeviceChecksumRecord> records) {
  if (records.empty()) return std::vector<uint64_t>{};
  std::vector<ChecksumPiece> pieces;
  std::vector<ChecksumRecord> spans;
  spans.reserve(records.size());
  for (const DeviceChecksumRecord& r : records) {
    spans.push_back({.first_piece = pieces.size(), .piece_count = r.pieces.size()});
    for (const DeviceChecksumPiece& p : r.pieces) {
      pieces.push_back(
          {.data = p.device, .data_bytes = p.data_bytes, .stored_bytes = p.stored_bytes});
    }
  }
  ContextGuard guard(*driver_, context_);
  if (!guard.status().ok()) return guard.status();
  return kernel_->ChecksumsSync(pieces, spans);
}

}  // namespace strata
