#include "launch/config/disk_space.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <filesystem>

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

}  // namespace strata
