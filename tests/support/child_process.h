// ChildProcess: for process tests, a program (`strata rank`, `strata pool`)
// run in a forked child with its stdout and stderr in a log file. Stop waits
// for the exit on a pidfd, with a bound, never on a timer; Kill is its
// SIGKILL.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace strata::testing {

class ChildProcess {
 public:
  // Forks and runs `args` (args[0] is the program's path). The child only
  // opens its log and execs, so other test threads may run (glibc's malloc
  // is fork-safe) as long as they hold no lock of their own the child needs.
  ChildProcess(std::vector<std::string> args, std::string log) : log_(std::move(log)) {
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      std::FILE* f = std::fopen(log_.c_str(), "w");
      ::dup2(::fileno(f), 1);
      ::dup2(::fileno(f), 2);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // A child still running is killed (SIGKILL) and reaped.
  ~ChildProcess() {
    if (pid_ > 0) ::kill(pid_, SIGKILL);
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
  }

  // SIGTERM, then the exit code (128 + signal when killed) within `bound`;
  // -1 when it did not end.
  int Stop(std::chrono::milliseconds bound) { return End(SIGTERM, bound); }
  // SIGKILL, then the exit code (128 + 9) once the child is gone, within
  // `bound`; -1 when it did not end. Callable from another thread while the
  // owner does not touch this object.
  int Kill(std::chrono::milliseconds bound) { return End(SIGKILL, bound); }

  // What the child wrote so far.
  std::string Log() const {
    std::ifstream f(log_);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

 private:
  // Sends `signal` and reaps the child once its pidfd says it ended.
  int End(int signal, std::chrono::milliseconds bound) {
    if (pid_ <= 0) return -1;
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
    ::kill(pid_, signal);
    pollfd p{pidfd, POLLIN, 0};
    const bool ended = pidfd >= 0 && ::poll(&p, 1, static_cast<int>(bound.count())) == 1;
    if (pidfd >= 0) ::close(pidfd);
    if (!ended) return -1;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  std::string log_;
  pid_t pid_ = -1;
};

}  // namespace strata::testing
