// SmallFileSystem: a test double for a filesystem of fixed capacity over the
// real one. Preallocations (the record writer's fallocate) count against the
// capacity by inode until the file is unlinked or truncated, and one that
// would exceed it fails with ENOSPC; FreeBytes reports what is left. Another
// process filling the disk is `Fill`.
#pragma once

#include <cerrno>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "tests/unit/store/record/record_test_support.h"

namespace strata::testing {

class SmallFileSystem final : public ForwardingFileSystem {
 public:
  explicit SmallFileSystem(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  // Takes `bytes` of the capacity as another process's files would.
  void Fill(uint64_t bytes) {
    std::lock_guard lock(mu_);
    other_ += bytes;
  }

  Status Allocate(int fd, uint64_t bytes) override {
    Result<FileInfo> info = Stat(fd);
    if (!info.ok()) return info.status();
    {
      std::lock_guard lock(mu_);
      const uint64_t mine = allocated_.count(info->inode) ? allocated_[info->inode] : 0;
      if (UsedLocked() - mine + bytes > capacity_) {
        return Status::FromErrno(ENOSPC, "fallocate " + std::to_string(bytes) + " bytes");
      }
      allocated_[info->inode] = bytes;
    }
    return ForwardingFileSystem::Allocate(fd, bytes);
  }
  Status Truncate(int fd, uint64_t bytes) override {
    Result<FileInfo> info = Stat(fd);
    if (info.ok()) {
      std::lock_guard lock(mu_);
      if (auto it = allocated_.find(info->inode); it != allocated_.end() && it->second > bytes) {
        it->second = bytes;
      }
    }
    return ForwardingFileSystem::Truncate(fd, bytes);
  }
  Status Unlink(int dir_fd, std::string_view name) override {
    Result<FileInfo> info = StatAt(dir_fd, name);
    Status s = ForwardingFileSystem::Unlink(dir_fd, name);
    if (s.ok() && info.ok()) {
      std::lock_guard lock(mu_);
      allocated_.erase(info->inode);
    }
    return s;
  }
  Result<uint64_t> FreeBytes(int) override {
    std::lock_guard lock(mu_);
    return capacity_ - std::min(capacity_, UsedLocked());
  }

 private:
  uint64_t UsedLocked() const {
    uint64_t used = other_;
    for (const auto& [inode, bytes] : allocated_) used += bytes;
    return used;
  }

  std::mutex mu_;
  const uint64_t capacity_;
  uint64_t other_ = 0;
  std::unordered_map<uint64_t, uint64_t> allocated_;  // by inode
};

}  // namespace strata::testing
