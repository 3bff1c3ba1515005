// RecordChecksumKernel: XXH3-64 of stored page records (and row segments)
// whose bytes are in GPU memory, bit-identical to the host's libxxhash
// checksums (store/record/checksum.h, docs/formats.md "Checksums"), for a
// transport that moves record bytes between NVMe and the GPU without a host
// copy (GPUDirect Storage). The kernel is record_checksum_kernel.cu.
//
// What a record's checksum covers (store/disk/disk_write_run.cc): one stored
// page record = for each stored rank (rank 0 only when pages are replicated),
// for each page plane in geometry order, the plane's unit_bytes then zeros to
// the next 4 KiB; the row segment likewise per rank. Describe it as one
// ChecksumPiece per plane, {plane address, unit_bytes, AlignUp(unit_bytes)},
// in that order; the padding is hashed as zeros without being read. To verify
// bytes that landed padded (the file's own padding), give data_bytes ==
// stored_bytes instead.
//
// Throughput: one warp per record, 4 independent 8-byte loads per lane in
// flight. With thousands of records (several warps per SM) it runs near HBM
// bandwidth: measured 2.0 TB/s on an H200 for 4096 records of 64 KiB
// (RecordChecksumGpuTest.ChecksumKernelThroughput prints it), far beyond an
// NVMe array. A batch of few records is latency bound (one warp each; expect
// on the order of 10-30 GB/s per record in flight), so batch many records
// (pages of several checkpoints) into one launch.
//
// Thread: created, used and destroyed on one thread with the context of
// `ordinal` current (ContextGuard).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cuda/driver_api.h"

namespace strata {

// Whether this build carries the kernel (nvcc was found at build time).
bool RecordChecksumKernelBuilt();

// Device layouts, shared with the kernel (record_checksum_kernel.cu).
//
// One piece of a record: `data_bytes` bytes read at device address `data`,
// then `stored_bytes - data_bytes` zeros hashed without being read.
struct ChecksumPiece {
  uint64_t data = 0;
  uint64_t data_bytes = 0;
  uint64_t stored_bytes = 0;
};

// One record to hash: pieces [first_piece, first_piece + piece_count) of the
// batch's piece array, in order.
struct ChecksumRecord {
  uint64_t first_piece = 0;
  uint64_t piece_count = 0;
};

// Device addresses of a batch. The arrays and the pieces' bytes must stay
// valid and unchanged until the launch completes on its stream.
struct ChecksumBatch {
  uint64_t pieces = 0;        // ChecksumPiece[...] in device memory
  uint64_t records = 0;       // ChecksumRecord[record_count] in device memory
  uint32_t record_count = 0;  // 0 launches nothing
};

class RecordChecksumKernel {
 public:
  // Loads the kernel into the current context (the context of `ordinal`).
  // kFailedPrecondition when the build has no kernel.
  static Result<std::unique_ptr<RecordChecksumKernel>> Load(
      const std::shared_ptr<const CudaDriver>& driver, int ordinal);
  ~RecordChecksumKernel();
  RecordChecksumKernel(const RecordChecksumKernel&) = delete;
  RecordChecksumKernel& operator=(const RecordChecksumKernel&) = delete;

  // Queues one launch on `stream` writing the checksum of record r to the
  // device u64 at `out + 8 * r`. Returns once queued; the caller waits on the
  // stream (or an event) before reading `out` or reusing the batch.
  Status Launch(CudaStream stream, const ChecksumBatch& batch, uint64_t out) const;

  // Synchronous form for tests and tools: uploads `pieces` and `records` (the
  // pieces' `data` are device addresses), runs on a private stream, waits and
  // returns one checksum per record.
  Result<std::vector<uint64_t>> ChecksumsSync(std::span<const ChecksumPiece> pieces,
                                              std::span<const ChecksumRecord> records) const;

 private:
  explicit RecordChecksumKernel(std::shared_ptr<const CudaDriver> driver)
      : driver_(std::move(driver)) {}
  std::shared_ptr<const CudaDriver> driver_;
  CudaModule module_ = nullptr;
  CudaFunction function_ = nullptr;
  uint32_t max_blocks_ = 0;  // one resident wave: multiprocessors x blocks per multiprocessor
};

}  // namespace strata
