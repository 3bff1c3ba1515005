#include "store/tier/direct_transport_host_doubles.h"

#include <array>
#include <cstring>

#include "store/base/aligned_buffer.h"
#include "store/record/checksum.h"

namespace strata {

namespace {

Status MoveEntry(FileSystem& fs, int fd, TransferDirection direction, const DirectIoEntry& e) {
  auto* device = reinterpret_cast<std::byte*>(e.device);
  AlignedBuffer bounce(e.bytes);  // zero-filled, a 4 KiB multiple
  if (direction == TransferDirection::kDeviceToHost) {
    std::memcpy(bounce.data(), device, e.bytes);
    return fs.WriteAt(fd, bounce.span(), e.file_offset);
  }
  Result<uint64_t> got = fs.ReadAt(fd, bounce.span(), e.file_offset);
  if (!got.ok()) return got.status();
  if (*got < e.bytes) {
    return Status::Corruption("read " + std::to_string(*got) + " of " + std::to_string(e.bytes) +
                              " bytes at " + std::to_string(e.file_offset));
  }
  std::memcpy(device, bounce.data(), e.bytes);
  return Status::Ok();
}

}  // namespace

void HostFileIo::FailEntry(size_t index, Status status) {
  MutexLock lock(mu_);
  fault_.emplace(index, std::move(status));
}

std::vector<Status> HostFileIo::Run(int fd, TransferDirection direction,
                                    std::span<const std::vector<DirectIoEntry>> batches) {
  std::optional<std::pair<size_t, Status>> fault;
  {
    MutexLock lock(mu_);
    fault.swap(fault_);
  }
  std::vector<Status> out;
  for (const std::vector<DirectIoEntry>& batch : batches) {
    for (const DirectIoEntry& e : batch) {
      if (fault && fault->first == out.size()) {
        out.push_back(fault->second);
        continue;
      }
      out.push_back(MoveEntry(fs_, fd, direction, e));
    }
  }
  return out;
}

Result<std::vector<uint64_t>> HostRecordChecksums::Compute(
    std::span<const DeviceChecksumRecord> records) {
  static constexpr std::array<std::byte, kRecordAlign> kZeros{};
  std::vector<uint64_t> out;
  out.reserve(records.size());
  Xxh3Stream stream;
  for (const DeviceChecksumRecord& r : records) {
    stream.Reset();
    for (const DeviceChecksumPiece& p : r.pieces) {
      stream.Update({reinterpret_cast<const std::byte*>(p.device), p.data_bytes});
      for (uint64_t pad = p.stored_bytes - p.data_bytes; pad > 0;) {
        const uint64_t n = std::min<uint64_t>(pad, kZeros.size());
        stream.Update({kZeros.data(), n});
        pad -= n;
      }
    }
    out.push_back(stream.Digest());
  }
  return out;
}

}  // namespace strata
