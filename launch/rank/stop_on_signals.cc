#include "launch/rank/stop_on_signals.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>

namespace strata {

namespace {

// What the pipe carries: a signal arrived, or the watcher should end.
constexpr char kSignalByte = 's';
constexpr char kQuitByte = 'q';

// The process's signal pipe (created once, never closed: the handler may
// run at any time) and the monotonic nanoseconds of the first signal (0:
// none yet).
int g_pipe[2] = {-1, -1};
std::atomic<int64_t> g_first_signal_ns{0};

int64_t MonotonicNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);  // async-signal-safe
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

void OnSignal(int) {
  const int64_t now = MonotonicNs();
  int64_t first = 0;
  if (g_first_signal_ns.compare_exchange_strong(first, now)) {
    const int saved = errno;
    (void)!write(g_pipe[1], &kSignalByte, 1);  // non-blocking; a full pipe already wakes
    errno = saved;
    return;
  }
  const int64_t window_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(StopOnSignals::kSameSignalWindow)
          .count();
  if (now - first >= window_ns) _exit(130);
}

Status OpenPipeOnce() {
  if (g_pipe[0] >= 0) return Status::Ok();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return Status::IoError(std::string("signal pipe: ") + std::strerror(errno));
  }
  // The handler must never block; the watcher blocks on its reads.
  if (fcntl(fds[1], F_SETFL, O_NONBLOCK) != 0) {
    return Status::IoError(std::string("signal pipe: ") + std::strerror(errno));
  }
  g_pipe[0] = fds[0];
  g_pipe[1] = fds[1];
  return Status::Ok();
}

// Reads the pipe until the quit byte; each signal byte requests the stop.
void Watch(StopRequest* stop) {
  for (;;) {
    char byte = 0;
    const ssize_t n = read(g_pipe[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || byte == kQuitByte) return;
    stop->Request();
  }
}

}  // namespace

Result<std::unique_ptr<StopOnSignals>> StopOnSignals::Install(StopRequest& stop) {
  STRATA_RETURN_IF_ERROR(OpenPipeOnce());
  std::unique_ptr<StopOnSignals> out(new StopOnSignals());
  out->watcher_ = std::thread(Watch, &stop);
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(SIGTERM, &sa, nullptr) != 0 || sigaction(SIGINT, &sa, nullptr) != 0) {
    return Status::IoError(std::string("signal handlers: ") + std::strerror(errno));
  }
  // A signal before Install (none is handled then) is not replayed.
  return out;
}

StopOnSignals::~StopOnSignals() {
  if (!watcher_.joinable()) return;
  // The pipe holds at most the one signal byte, so this write has room.
  ssize_t n;
  do {
    n = write(g_pipe[1], &kQuitByte, 1);
  } while (n < 0 && errno == EINTR);
  watcher_.join();
}

}  // namespace strata
