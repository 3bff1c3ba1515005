// FileSystem: the synchronous file syscalls the record code makes, behind one
// narrow interface so that a fault-injecting implementation can stand in for
// PosixFileSystem (which calls Linux directly). Every call is independent and
// thread-safe; descriptors are plain ints owned by the caller (close them with
// Close). Errors come from Status::FromErrno (ENOSPC/EDQUOT -> kFsFull), with
// kNotFound for ENOENT, kAlreadyExists for EEXIST and kBusy for a held lock.
//
// Permissions: files are created 0600 and directories 0700 (record bytes are
// the model's activations; no other user reads them). Files are only ever
// created new: O_EXCL|O_NOFOLLOW, so a name that already exists (a stale
// file, or a symlink planted at a temporary name) fails with kAlreadyExists
// and nothing is written through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "store/base/status.h"

namespace strata {

enum class OpenFor : unsigned char {
  kDirectWriteNew,  // O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_DIRECT, mode 0600
  kDirectRead,      // O_RDONLY|O_DIRECT
  kRead,            // O_RDONLY (page cache)
  kReadWrite,       // O_RDWR (page cache), for truncation
  kWriteNew,        // O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW (page cache), mode 0600
};

struct FileInfo {
  uint64_t bytes = 0;
  int64_t mtime_unix_ns = 0;
  uint64_t device = 0;
  uint64_t inode = 0;
  bool is_regular = false;
  bool is_directory = false;
};

// Whether OpenDirectory creates a missing directory (and its parents).
enum class DirectoryMissing : unsigned char { kFail, kCreate };

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Opens a directory; with kCreate, creates it and its missing parents
  // (mode 0700) first.
  virtual Result<int> OpenDirectory(const std::string& path, DirectoryMissing missing) = 0;
  virtual Result<int> OpenAt(int dir_fd, std::string_view name, OpenFor how) = 0;
  virtual void Close(int fd) = 0;

  // Preallocates [0, bytes) (fallocate mode 0). Filesystems without
  // fallocate succeed without preallocating.
  virtual Status Allocate(int fd, uint64_t bytes) = 0;
  virtual Status Truncate(int fd, uint64_t bytes) = 0;
  virtual Result<FileInfo> Stat(int fd) = 0;
  virtual Result<FileInfo> StatAt(int dir_fd, std::string_view name) = 0;
  // pread/pwrite until done or EOF; returns the bytes transferred.
  virtual Result<uint64_t> ReadAt(int fd, std::span<std::byte> out, uint64_t offset) = 0;
  virtual Status WriteAt(int fd, std::span<const std::byte> bytes, uint64_t offset) = 0;
  virtual Status Rename(int dir_fd, std::string_view from, std::string_view to) = 0;
  virtual Status Unlink(int dir_fd, std::string_view name) = 0;
  virtual Status RemoveDirectory(int dir_fd, std::string_view name) = 0;
  virtual Status SyncData(int fd) = 0;  // fdatasync
  virtual Status Sync(int fd) = 0;      // fsync (directories)
  // syncfs: commits the whole filesystem holding `fd` (journal, discards).
  virtual Status SyncFilesystem(int fd) = 0;
  // Names in a directory, excluding "." and "..", in no particular order.
  virtual Result<std::vector<std::string>> List(int dir_fd) = 0;
  // flock(LOCK_EX|LOCK_NB); kBusy when another open file description holds it.
  virtual Status LockExclusive(int fd) = 0;
  // A name for the filesystem holding `fd` ("ext4", "tmpfs", "xfs", or the
  // statfs magic in hex).
  virtual std::string FilesystemName(int fd) = 0;
  // Bytes an unprivileged writer may still allocate on the filesystem holding
  // `fd` (statvfs f_bavail * f_frsize).
  virtual Result<uint64_t> FreeBytes(int fd) = 0;
};

inline constexpr unsigned kNewFileMode = 0600;
inline constexpr unsigned kNewDirectoryMode = 0700;

// The real implementation: Linux syscalls, retrying EINTR.
class PosixFileSystem final : public FileSystem {
 public:
  Result<int> OpenDirectory(const std::string& path, DirectoryMissing missing) override;
  Result<int> OpenAt(int dir_fd, std::string_view name, OpenFor how) override;
  void Close(int fd) override;
  Status Allocate(int fd, uint64_t bytes) override;
  Status Truncate(int fd, uint64_t bytes) override;
  Result<FileInfo> Stat(int fd) override;
  Result<FileInfo> StatAt(int dir_fd, std::string_view name) override;
  Result<uint64_t> ReadAt(int fd, std::span<std::byte> out, uint64_t offset) override;
  Status WriteAt(int fd, std::span<const std::byte> bytes, uint64_t offset) override;
  Status Rename(int dir_fd, std::string_view from, std::string_view to) override;
  Status Unlink(int dir_fd, std::string_view name) override;
  Status RemoveDirectory(int dir_fd, std::string_view name) override;
  Status SyncData(int fd) override;
  Status Sync(int fd) override;
  Status SyncFilesystem(int fd) override;
  Result<std::vector<std::string>> List(int dir_fd) override;
  Status LockExclusive(int fd) override;
  std::string FilesystemName(int fd) override;
  Result<uint64_t> FreeBytes(int fd) override;
};

}  // namespace strata
