// CPU test doubles of the direct transport's seams (tests, and hosts without
// GPUDirect Storage where a test wants the direct job logic): "device"
// addresses are host addresses, as HostPlanes::planes() gives them.
//  - HostFileIo moves each entry with FileSystem::WriteAt / ReadAt through a
//    4 KiB-aligned bounce buffer (the file is open O_DIRECT), padding writes
//    with zeros to the entry's 4 KiB boundary as the file's padding is.
//  - HostRecordChecksums hashes host memory with store/record/checksum.h.
// Thread: the direct transport's worker, except FailEntry (any thread,
// before the job it targets is submitted).
#pragma once

#include <optional>

#include "store/base/mutex.h"
#include "store/io/file_system.h"
#include "store/tier/device_record_checksums.h"
#include "store/tier/direct_file_io.h"

namespace strata {

class HostFileIo final : public DirectFileIo {
 public:
  explicit HostFileIo(FileSystem& fs) : fs_(fs) {}
  std::vector<Status> Run(int fd, TransferDirection direction,
                          std::span<const std::vector<DirectIoEntry>> batches) override;
  // Fault injection: the next Run fails its entry `index` (flattened) with
  // `status` without moving it, and runs the others.
  void FailEntry(size_t index, Status status);

 private:
  FileSystem& fs_;
  Mutex mu_;
  std::optional<std::pair<size_t, Status>> fault_ GUARDED_BY(mu_);
};

class HostRecordChecksums final : public DeviceRecordChecksums {
 public:
  Result<std::vector<uint64_t>> Compute(std::span<const DeviceChecksumRecord> records) override;
};

}  // namespace strata
