// CrashFileSystem: a power-loss simulator for tests (never used in
// production), after leveldb's db/fault_injection_test.cc and RocksDB's
// FaultInjectionTestFS. It forwards to a real FileSystem and remembers what
// has not been made durable yet:
//   - bytes written (FileSystem::WriteAt, or BlockIo writes through
//     crash_block_io() wrapping the disk thread's BlockIo) and size changes of
//     a file until that file is fdatasync'ed / fsync'ed;
//   - names created, renamed and unlinked in a directory until that directory
//     is fsync'ed (an unlinked file is kept under a hidden name, which List
//     never shows, until then).
// SimulateCrash() then forgets it, as a power cut would. kForgetAll: every
// unsynced byte range reads back as zeros, sizes fall back to the last synced
// size, and unsynced name changes are undone newest first. kForgetSomeData:
// names and sizes survive (a filesystem that journals metadata ahead of
// data) but every other unsynced range reads back as zeros, so a renamed
// record may keep a valid header over zeroed pages (a torn record). Call it only
// when every descriptor from this filesystem is closed (the store is shut
// down). Files that existed before this object are treated as durable.
// Thread-safe: the disk thread and its owner call it concurrently.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "store/base/mutex.h"
#include "store/io/block_io.h"
#include "store/io/file_system.h"

namespace strata {

enum class CrashMode : unsigned char {
  kForgetAll,       // unsynced data, sizes and name changes are lost
  kForgetSomeData,  // every other unsynced range is lost; names and sizes survive
};

struct CrashReport {
  uint64_t ranges_zeroed = 0;  // unsynced written ranges forgotten
  uint64_t names_undone = 0;   // creates, renames and unlinks undone
  uint64_t files_resized = 0;  // sizes put back to the last synced size
};

class CrashFileSystem final : public FileSystem {
 public:
  explicit CrashFileSystem(FileSystem& inner) : inner_(inner) {}

  // Wraps a BlockIo so that its writes and syncs are tracked here. `this`
  // must outlive the result.
  std::unique_ptr<BlockIo> WrapBlockIo(std::unique_ptr<BlockIo> io);

  // Forgets everything not synced (see above). Errors name the file.
  Result<CrashReport> SimulateCrash(CrashMode mode);

  Result<int> OpenDirectory(const std::string& path, DirectoryMissing missing) override;
  Result<int> OpenAt(int dir_fd, std::string_view name, OpenFor how) override;
  void Close(int fd) override;
  Status Allocate(int fd, uint64_t bytes) override;
  Status Truncate(int fd, uint64_t bytes) override;
  Result<FileInfo> Stat(int fd) override { return inner_.Stat(fd); }
  Result<FileInfo> StatAt(int dir_fd, std::string_view name) override {
    return inner_.StatAt(dir_fd, name);
  }
  Result<uint64_t> ReadAt(int fd, std::span<std::byte> out, uint64_t offset) override {
    return inner_.ReadAt(fd, out, offset);
  }
  Status WriteAt(int fd, std::span<const std::byte> bytes, uint64_t offset) override;
  Status Rename(int dir_fd, std::string_view from, std::string_view to) override;
  Status Unlink(int dir_fd, std::string_view name) override;
  Status RemoveDirectory(int dir_fd, std::string_view name) override {
    return inner_.RemoveDirectory(dir_fd, name);
  }
  Status SyncData(int fd) override;
  Status Sync(int fd) override;
  Status SyncFilesystem(int fd) override;
  Result<std::vector<std::string>> List(int dir_fd) override;
  Status LockExclusive(int fd) override { return inner_.LockExclusive(fd); }
  std::string FilesystemName(int fd) override { return inner_.FilesystemName(fd); }
  Result<uint64_t> FreeBytes(int fd) override { return inner_.FreeBytes(fd); }

  // Called by the BlockIo wrapper.
  void NoteWrite(int fd, uint64_t offset, uint64_t bytes);
  void NoteSync(int fd);

 private:
  using Inode = std::pair<uint64_t, uint64_t>;  // device, inode
  struct FileState {
    std::string path;                                  // where it lives now
    uint64_t synced_bytes = 0;                         // size at the last sync
    std::vector<std::pair<uint64_t, uint64_t>> dirty;  // unsynced [offset, +bytes)
  };
  enum class NameOp : unsigned char { kCreate, kRename, kUnlink };
  struct NameChange {
    NameOp op = NameOp::kCreate;
    std::string from;  // kRename: the old name; kUnlink: the hidden name
    std::string to;    // kCreate: the name; kRename: the new name; kUnlink: the name
  };
  struct DirState {
    std::string path;
    std::vector<NameChange> unsynced;
  };

  Inode InodeOf(int fd);
  void SyncFileLocked(const Inode& inode) REQUIRES(mu_);
  void SyncDirLocked(const Inode& inode) REQUIRES(mu_);

  FileSystem& inner_;
  Mutex mu_;
  std::map<int, Inode> open_ GUARDED_BY(mu_);         // descriptor -> file or directory
  std::map<Inode, FileState> files_ GUARDED_BY(mu_);  // files created through this object
  std::map<Inode, DirState> dirs_ GUARDED_BY(mu_);
  uint64_t next_hidden_ GUARDED_BY(mu_) = 0;
};

// The hidden-name prefix of unlinked files kept until their directory syncs.
inline constexpr std::string_view kCrashHiddenPrefix = ".crash-unlinked-";

}  // namespace strata
