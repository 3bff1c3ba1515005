// FaultyFileSystem: a FileSystem decorator that applies a FaultPlan to the
// calls it forwards (fault-injection tests; never used in production).
// Failing calls return Status::FromErrno(error) without reaching the inner
// filesystem; a short read returns the first half of what was asked for; a
// short write writes the first half and then fails (a torn write). Calls
// not named by FaultOp are forwarded unchanged. Thread-safe like the inner
// filesystem; `inner` and `counters` must outlive it.
#pragma once

#include "store/io/fault_plan.h"
#include "store/io/file_system.h"

namespace strata {

class FaultyFileSystem final : public FileSystem {
 public:
  FaultyFileSystem(FileSystem& inner, FaultPlan plan, FaultCounters& counters)
      : inner_(inner), plan_(std::move(plan)), counters_(counters) {}

  Result<int> OpenDirectory(const std::string& path, DirectoryMissing missing) override;
  Result<int> OpenAt(int dir_fd, std::string_view name, OpenFor how) override;
  void Close(int fd) override { inner_.Close(fd); }
  Status Allocate(int fd, uint64_t bytes) override;
  Status Truncate(int fd, uint64_t bytes) override;
  Result<FileInfo> Stat(int fd) override { return inner_.Stat(fd); }
  Result<FileInfo> StatAt(int dir_fd, std::string_view name) override {
    return inner_.StatAt(dir_fd, name);
  }
  Result<uint64_t> ReadAt(int fd, std::span<std::byte> out, uint64_t offset) override;
  Status WriteAt(int fd, std::span<const std::byte> bytes, uint64_t offset) override;
  Status Rename(int dir_fd, std::string_view from, std::string_view to) override;
  Status Unlink(int dir_fd, std::string_view name) override;
  Status RemoveDirectory(int dir_fd, std::string_view name) override;
  Status SyncData(int fd) override;
  Status Sync(int fd) override;
  Status SyncFilesystem(int fd) override;
  Result<std::vector<std::string>> List(int dir_fd) override { return inner_.List(dir_fd); }
  Status LockExclusive(int fd) override { return inner_.LockExclusive(fd); }
  std::string FilesystemName(int fd) override { return inner_.FilesystemName(fd); }
  Result<uint64_t> FreeBytes(int fd) override { return inner_.FreeBytes(fd); }

 private:
  // Counts one `op` and returns the plan's decision for it (counting it as
  // fired when it injects something).
  FaultDecision Decide(FaultOp op);
  // The injected error for a call that fails outright, or Ok.
  Status Fail(FaultOp op);

  FileSystem& inner_;
  const FaultPlan plan_;
  FaultCounters& counters_;
};

}  // namespace strata
