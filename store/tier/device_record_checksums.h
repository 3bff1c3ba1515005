// DeviceRecordChecksums: the seam through which the direct transport (seed
// 2.6) computes record checksums (docs/formats.md "Checksums": XXH3-64 per
// stored page record and over the stored row segment) of bytes that sit in
// device memory. The real implementation wraps RecordChecksumKernel
// (cuda/device_record_checksums_kernel.h); the CPU test double hashes host
// memory with store/record/checksum.h.
//
// Thread: the direct transport's worker thread only.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "store/base/status.h"

namespace strata {

// `data_bytes` at device address `device`, then `stored_bytes - data_bytes`
// zeros hashed without being read (a plane's 4 KiB padding).
struct DeviceChecksumPiece {
  uint64_t device = 0;
  uint64_t data_bytes = 0;
  uint64_t stored_bytes = 0;
  friend bool operator==(const DeviceChecksumPiece&, const DeviceChecksumPiece&) = default;
};

// One checksum: the XXH3-64 of its pieces' stored bytes, concatenated.
struct DeviceChecksumRecord {
  std::vector<DeviceChecksumPiece> pieces;
};

class DeviceRecordChecksums {
 public:
  virtual ~DeviceRecordChecksums() = default;
  // One checksum per record, in order; blocks until computed.
  virtual Result<std::vector<uint64_t>> Compute(std::span<const DeviceChecksumRecord> records) = 0;
};

}  // namespace strata
