// WaitForFile: for process tests — waits, without polling on a timer, until
// a file appears (a socket another process creates once it serves), or until
// a file holds a text (a line a process logs once it serves).
#pragma once

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

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

namespace internal {

inline bool FileHolds(const std::filesystem::path& path, const std::string& text) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {}).find(text) != std::string::npos;
}

}  // namespace internal

// True once `path` holds `text`, false after `bound`. Wakes on each write in
// its directory (inotify).
inline bool WaitForFileText(const std::filesystem::path& path, const std::string& text,
                            std::chrono::milliseconds bound) {
  const int fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) return false;
  const bool watched =
      ::inotify_add_watch(fd, path.parent_path().c_str(), IN_CREATE | IN_MODIFY) >= 0;
  const auto deadline = std::chrono::steady_clock::now() + bound;
  bool found = internal::FileHolds(path, text);
  while (watched && !found && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    (void)::poll(&p, 1, 200);
    char buf[4096];
    while (::read(fd, buf, sizeof buf) > 0) {
    }
    found = internal::FileHolds(path, text);
  }
  ::close(fd);
  return found;
}

}  // namespace strata::testing
