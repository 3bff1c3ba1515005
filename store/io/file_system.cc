#include "store/io/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace strata {

namespace {

std::string Quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

Status ErrnoStatus(int err, const std::string& what) {
  if (err == ENOENT) return Status::NotFound(what + ": " + std::strerror(err));
  if (err == EEXIST) return Status::AlreadyExists(what + ": " + std::strerror(err));
  return Status::FromErrno(err, what);
}

FileInfo InfoOf(const struct stat& st) {
  FileInfo info;
  info.bytes = static_cast<uint64_t>(st.st_size);
  info.mtime_unix_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  info.device = st.st_dev;
  info.inode = st.st_ino;
  info.is_regular = S_ISREG(st.st_mode);
  info.is_directory = S_ISDIR(st.st_mode);
  return info;
}

int FlagsFor(OpenFor how) {
  switch (how) {
    case OpenFor::kDirectWriteNew: return O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_DIRECT;
    case OpenFor::kDirectRead: return O_RDONLY | O_DIRECT;
    case OpenFor::kRead: return O_RDONLY;
    case OpenFor::kReadWrite: return O_RDWR;
    case OpenFor::kWriteNew: return O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
  }
  return O_RDONLY;
}

// mkdir -p with mode kNewDirectoryMode for every component it creates;
// existing directories keep their mode.
Status MakeDirectories(const std::string& path) {
  for (size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
    const std::string prefix = path.substr(0, end);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), kNewDirectoryMode) != 0 && errno != EEXIST) {
      return ErrnoStatus(errno, "create directory " + Quoted(prefix));
    }
    if (end == std::string::npos) return Status::Ok();
  }
}

}  // namespace

Result<int> PosixFileSystem::OpenDirectory(const std::string& path, DirectoryMissing missing) {
  if (missing == DirectoryMissing::kCreate) STRATA_RETURN_IF_ERROR(MakeDirectories(path));
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open directory " + Quoted(path));
  return fd;
}

Result<int> PosixFileSystem::OpenAt(int dir_fd, std::string_view name, OpenFor how) {
  const std::string n(name);
  int fd;
  do {
    fd = ::openat(dir_fd, n.c_str(), FlagsFor(how) | O_CLOEXEC, kNewFileMode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoStatus(errno, "open " + Quoted(n));
  return fd;
}

void PosixFileSystem::Close(int fd) {
  if (fd >= 0) ::close(fd);
}

Status PosixFileSystem::Allocate(int fd, uint64_t bytes) {
  if (bytes == 0) return Status::Ok();
  int rc;
  do {
    rc = ::fallocate(fd, 0, 0, static_cast<off_t>(bytes));
  } while (rc != 0 && errno == EINTR);
  if (rc == 0 || errno == EOPNOTSUPP) return Status::Ok();
  return Status::FromErrno(errno, "fallocate " + std::to_string(bytes) + " bytes");
}

Status PosixFileSystem::Truncate(int fd, uint64_t bytes) {
  int rc;
  do {
    rc = ::ftruncate(fd, static_cast<off_t>(bytes));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return Status::FromErrno(errno, "ftruncate to " + std::to_string(bytes));
  return Status::Ok();
}

Result<FileInfo> PosixFileSystem::Stat(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, "fstat");
  return InfoOf(st);
}

Result<FileInfo> PosixFileSystem::StatAt(int dir_fd, std::string_view name) {
  struct stat st {};
  const std::string n(name);
  if (::fstatat(dir_fd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return ErrnoStatus(errno, "stat " + Quoted(n));
  }
  return InfoOf(st);
}

Result<uint64_t> PosixFileSystem::ReadAt(int fd, std::span<std::byte> out, uint64_t offset) {
  uint64_t done = 0;
  while (done < out.size()) {
    ssize_t n =
        ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, "pread at " + std::to_string(offset + done));
    if (n == 0) break;
    done += static_cast<uint64_t>(n);
  }
  return done;
}

Status PosixFileSystem::WriteAt(int fd, std::span<const std::byte> bytes, uint64_t offset) {
  uint64_t done = 0;
  while (done < bytes.size()) {
    ssize_t n =
        ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, "pwrite at " + std::to_string(offset + done));
    done += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status PosixFileSystem::Rename(int dir_fd, std::string_view from, std::string_view to) {
  const std::string f(from), t(to);
  if (::renameat(dir_fd, f.c_str(), dir_fd, t.c_str()) != 0) {
    return ErrnoStatus(errno, "rename " + Quoted(f) + " to " + Quoted(t));
  }
  return Status::Ok();
}

Status PosixFileSystem::Unlink(int dir_fd, std::string_view name) {
  const std::string n(name);
  if (::unlinkat(dir_fd, n.c_str(), 0) != 0) return ErrnoStatus(errno, "unlink " + Quoted(n));
  return Status::Ok();
}

Status PosixFileSystem::RemoveDirectory(int dir_fd, std::string_view name) {
  const std::string n(name);
  if (::unlinkat(dir_fd, n.c_str(), AT_REMOVEDIR) != 0) {
    return ErrnoStatus(errno, "remove directory " + Quoted(n));
  }
  return Status::Ok();
}

Status PosixFileSystem::SyncData(int fd) {
  int rc;
  do {
    rc = ::fdatasync(fd);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return Status::FromErrno(errno, "fdatasync");
  return Status::Ok();
}

Status PosixFileSystem::Sync(int fd) {
  int rc;
  do {
    rc = ::fsync(fd);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return Status::FromErrno(errno, "fsync");
  return Status::Ok();
}

Status PosixFileSystem::SyncFilesystem(int fd) {
  if (::syncfs(fd) != 0) return Status::FromErrno(errno, "syncfs");
  return Status::Ok();
}

Result<std::vector<std::string>> PosixFileSystem::List(int dir_fd) {
  int fd = ::dup(dir_fd);
  if (fd < 0) return Status::FromErrno(errno, "dup directory descriptor");
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    int err = errno;
    ::close(fd);
    return Status::FromErrno(err, "fdopendir");
  }
  ::rewinddir(dir);
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* e = ::readdir(dir)) {
    std::string_view n(e->d_name);
    if (n != "." && n != "..") names.emplace_back(n);
    errno = 0;
  }
  int err = errno;
  ::closedir(dir);
  if (err != 0) return Status::FromErrno(err, "readdir");
  return names;
}

Status PosixFileSystem::LockExclusive(int fd) {
  int rc;
  do {
    rc = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return Status::Ok();
  if (errno == EWOULDBLOCK) return Status::Busy("locked by another process");
  return Status::FromErrno(errno, "flock");
}

Result<uint64_t> PosixFileSystem::FreeBytes(int fd) {
  struct statvfs fs {};
  if (::fstatvfs(fd, &fs) != 0) return Status::FromErrno(errno, "fstatvfs");
  return uint64_t{fs.f_bavail} * fs.f_frsize;
}

std::string PosixFileSystem::FilesystemName(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return "unknown filesystem";
  switch (static_cast<unsigned long>(fs.f_type)) {
    case EXT4_SUPER_MAGIC: return "ext4";
    case TMPFS_MAGIC: return "tmpfs";
    case XFS_SUPER_MAGIC: return "xfs";
    case BTRFS_SUPER_MAGIC: return "btrfs";
    case NFS_SUPER_MAGIC: return "nfs";
    case OVERLAYFS_SUPER_MAGIC: return "overlayfs";
    case FUSE_SUPER_MAGIC: return "fuse";
    case RAMFS_MAGIC: return "ramfs";
    default: break;
  }
  char hex[32];
  std::snprintf(hex, sizeof hex, "filesystem 0x%lx", static_cast<unsigned long>(fs.f_type));
  return hex;
}

}  // namespace strata
