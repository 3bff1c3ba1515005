#include "launch/config/disk_space.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <filesystem>

#include "store/tier/space_limit.h"

namespace strata {

Result<uint64_t> FilesystemFreeBytes(const std::string& path) {
  std::filesystem::path at = std::filesystem::absolute(path).lexically_normal();
  std::error_code ec;
  while (!std::filesystem::exists(at, ec) && at.has_parent_path() && at != at.parent_path()) {
    at = at.parent_path();
  }
  struct statvfs fs {};
  if (statvfs(at.c_str(), &fs) != 0) {
    return Status::FromErrno(errno, "free space of " + at.string() + " (for " + path + ")");
  }
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
}

uint64_t DirectoryDiskBytes(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  uint64_t bytes = 0;
  for (fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      bytes += static_cast<uint64_t>(st.st_blocks) * 512;
    }
  }
  return bytes;
}

Result<uint64_t> LimitForRecordDirectory(const std::string& path, uint64_t limit_bytes) {
  STRATA_ASSIGN_OR_RETURN(uint64_t free_bytes, FilesystemFreeBytes(path));
  const uint64_t held = DirectoryDiskBytes(path);
  const uint64_t limit = LimitForFilesystem(limit_bytes, free_bytes + held);
  if (limit < limit_bytes) {
    spdlog::warn(
        "prefix_cache.disk_limit is {} bytes, but the filesystem holding '{}' has {} bytes free "
        "and the directory holds {} bytes already: the disk tier's limit is {} bytes",
        limit_bytes, path, free_bytes, held, limit);
  }
  return limit;
}

}  // namespace strata
