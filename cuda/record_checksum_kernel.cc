#include "cuda/record_checksum_kernel.h"

#include <algorithm>
#include <string>

#include "cuda/xxh3_core.h"

namespace strata {

#if STRATA_HAVE_CHECKSUM_KERNEL
extern const char kRecordChecksumKernelPtx[];  // generated from record_checksum_kernel.cu
#endif

namespace {

constexpr const char* kKernelName = "strata_record_checksums";
constexpr uint32_t kThreadsPerBlock = 256;  // the kernel's __launch_bounds__
constexpr uint32_t kWarpsPerBlock = kThreadsPerBlock / 32;
// Blocks of 256 threads resident per multiprocessor (2048 threads each on
// sm_80 and later): a grid of one full wave; warps loop over further records.
constexpr uint32_t kBlocksPerMultiprocessor = 8;

// Device memory freed when the scope ends (the synchronous helper's buffers).
class DeviceBuffer {
 public:
  DeviceBuffer(const CudaDriver& driver, uint64_t bytes) : driver_(driver) {
    Result<uint64_t> a = driver.MemAlloc(std::max<uint64_t>(bytes, 8));
    status_ = a.status();
    if (a.ok()) address_ = *a;
  }
  ~DeviceBuffer() {
    if (address_ != 0) (void)driver_.MemFree(address_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  const Status& status() const { return status_; }
  uint64_t address() const { return address_; }

 private:
  const CudaDriver& driver_;
  Status status_;
  uint64_t address_ = 0;
};

}  // namespace

static_assert(sizeof(ChecksumPiece) == sizeof(xxh3::Piece) && sizeof(ChecksumPiece) == 24,
              "ChecksumPiece must match xxh3::Piece, the kernel's piece layout");
static_assert(sizeof(ChecksumRecord) == 16, "ChecksumRecord must match StrataChecksumRecord");

bool RecordChecksumKernelBuilt() { return STRATA_HAVE_CHECKSUM_KERNEL != 0; }

Result<std::unique_ptr<RecordChecksumKernel>> RecordChecksumKernel::Load(
    const std::shared_ptr<const CudaDriver>& driver, int ordinal) {
#if STRATA_HAVE_CHECKSUM_KERNEL
  STRATA_ASSIGN_OR_RETURN(
      int multiprocessors,
      driver->DeviceAttribute(ordinal, CudaDeviceAttribute::kMultiprocessorCount));
  std::unique_ptr<RecordChecksumKernel> k(new RecordChecksumKernel(driver));
  k->max_blocks_ = static_cast<uint32_t>(std::max(multiprocessors, 1)) * kBlocksPerMultiprocessor;
  STRATA_ASSIGN_OR_RETURN(k->module_, driver->LoadModule(kRecordChecksumKernelPtx));
  STRATA_ASSIGN_OR_RETURN(k->function_, driver->GetFunction(k->module_, kKernelName));
  return k;
#else
  (void)driver;
  (void)ordinal;
  return Status::FailedPrecondition(
      "the record checksum kernel was not built (nvcc was not found at build time)");
#endif
}

RecordChecksumKernel::~RecordChecksumKernel() {
  if (module_ != nullptr) (void)driver_->UnloadModule(module_);
}

Status RecordChecksumKernel::Launch(CudaStream stream, const ChecksumBatch& batch,
                                    uint64_t out) const {
  if (batch.record_count == 0) return Status::Ok();
  if (batch.pieces == 0 || batch.records == 0 || out == 0) {
    return Status::InvalidArgument("record checksum batch without device arrays");
  }
  uint64_t pieces = batch.pieces;
  uint64_t records = batch.records;
  uint32_t count = batch.record_count;
  uint64_t sums = out;
  void* params[] = {&pieces, &records, &count, &sums};
  const uint32_t grid = std::min(max_blocks_, (count + kWarpsPerBlock - 1) / kWarpsPerBlock);
  return driver_->LaunchKernel(function_, grid, kThreadsPerBlock, params, stream);
}

Result<std::vector<uint64_t>> RecordChecksumKernel::ChecksumsSync(
    std::span<const ChecksumPiece> pieces, std::span<const ChecksumRecord> records) const {
  if (records.size() > UINT32_MAX) {
    return Status::InvalidArgument("record checksum batch of " + std::to_string(records.size()) +
                                   " records exceeds 2^32 - 1");
  }
  for (const ChecksumRecord& r : records) {
    if (r.first_piece > pieces.size() || r.piece_count > pieces.size() - r.first_piece) {
      return Status::InvalidArgument("record checksum record names pieces beyond the list");
    }
  }
  std::vector<uint64_t> sums(records.size());
  if (records.empty()) return sums;
  const CudaDriver& d = *driver_;
  DeviceBuffer device_pieces(d, pieces.size_bytes());
  DeviceBuffer device_records(d, records.size_bytes());
  DeviceBuffer device_sums(d, sums.size() * sizeof(uint64_t));
  STRATA_RETURN_IF_ERROR(device_pieces.status());
  STRATA_RETURN_IF_ERROR(device_records.status());
  STRATA_RETURN_IF_ERROR(device_sums.status());
  if (!pieces.empty()) {
    STRATA_RETURN_IF_ERROR(d.CopySync(TransferDirection::kHostToDevice, device_pieces.address(),
                                      const_cast<ChecksumPiece*>(pieces.data()),
                                      pieces.size_bytes()));
  }
  STRATA_RETURN_IF_ERROR(d.CopySync(TransferDirection::kHostToDevice, device_records.address(),
                                    const_cast<ChecksumRecord*>(records.data()),
                                    records.size_bytes()));
  STRATA_ASSIGN_OR_RETURN(CudaStream stream, d.CreateLowestPriorityStream());
  const ChecksumBatch batch{.pieces = device_pieces.address(),
                            .records = device_records.address(),
                            .record_count = static_cast<uint32_t>(records.size())};
  Status launched = Launch(stream, batch, device_sums.address());
  Status synced = launched.ok() ? d.SynchronizeStream(stream) : launched;
  (void)d.DestroyStream(stream);
  STRATA_RETURN_IF_ERROR(synced);
  STRATA_RETURN_IF_ERROR(d.CopySync(TransferDirection::kDeviceToHost, device_sums.address(),
                                    sums.data(), sums.size() * sizeof(uint64_t)));
  return sums;
}

}  // namespace strata
