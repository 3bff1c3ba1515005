#include "cuda/cufile_policy.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda/cufile_api.h"

namespace strata {

std::string CuFilePolicyJson(const CuFilePolicy& policy) {
  const char* compat = policy.compat == CompatMode::kAllowedForTests ? "true" : "false";
  std::string json;
  json += "{\n";
  json += "  \"logging\": { \"level\": \"ERROR\" },\n";
  json += "  \"properties\": {\n";
  json += "    \"max_direct_io_size_kb\": " + std::to_string(policy.max_direct_io_kib) + ",\n";
  json += "    \"max_batch_io_size\": " + std::to_string(policy.max_batch_io_entries) + ",\n";
  json += "    \"allow_compat_mode\": " + std::string(compat) + ",\n";
  json += "    \"use_poll_mode\": false\n";
  json += "  }\n";
  json += "}\n";
  return json;
}

Result<std::string> InstallCuFilePolicy(const CuFilePolicy& policy, const std::string& dir) {
  std::string where = dir;
  if (where.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/strata-cufile-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) {
      return Status::IoError("mkdtemp " + pattern + ": " + std::strerror(errno));
    }
    where = buf.data();
  }
  const std::string path = where + "/strata-cufile.json";
  (void)unlink(path.c_str());
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError("create " + path + ": " + std::strerror(errno));
  const std::string json = CuFilePolicyJson(policy);
  const ssize_t n = write(fd, json.data(), json.size());
  const int write_errno = errno;
  close(fd);
  if (n != static_cast<ssize_t>(json.size())) {
    return Status::IoError("write " + path + ": " + std::strerror(write_errno));
  }
  if (setenv(kCuFileConfigEnv, path.c_str(), 1) != 0) {
    return Status::IoError(std::string("setenv ") + kCuFileConfigEnv + ": " + std::strerror(errno));
  }
  return path;
}

}  // namespace strata
