// WaitForFile: for process tests — waits, without polling on a timer, until
// a file appears (a socket another process creates once it serves).
#pragma once

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

namespace strata::testing {

// True once `path` exists, false after `bound`. Wakes on each creation in
// its directory (inotify).
inline bool WaitForFile(const std::filesystem::path& path, std::chrono::milliseconds bound) {
  const int fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) return false;
  const bool watched =
      ::inotify_add_watch(fd, path.parent_path().c_str(), IN_CREATE | IN_MOVED_TO) >= 0;
  const auto deadline = std::chrono::steady_clock::now() + bound;
  bool found = std::filesystem::exists(path);
  while (watched && !found && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    (void)::poll(&p, 1, 200);
    char buf[4096];
    while (::read(fd, buf, sizeof buf) > 0) {
    }
    found = std::filesystem::exists(path);
  }
  ::close(fd);
  return found;
}

}  // namespace strata::testing
