// WakeSignal: lets one owner thread sleep until any of several sources (a
// disk thread, transfer threads, a link inbox) may have something for it, so
// it waits on all of them at once instead of on one at a time in slices.
//
// Level-triggered: Notify() leaves the signal raised until the owner's next
// Wait returns, so a notification that lands between the owner's poll of its
// sources and its wait is never lost (the wait returns at once and the owner
// polls again). A notification carries no data: after waking, the owner polls
// every source. Spurious wake-ups are allowed.
//
// Thread: Notify from any thread; WaitUntil / WaitFor from one owner thread
// at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "store/base/mutex.h"

namespace strata {

class WakeSignal {
 public:
  WakeSignal() = default;
  WakeSignal(const WakeSignal&) = delete;
  WakeSignal& operator=(const WakeSignal&) = delete;

  // Raises the signal and wakes a waiting owner. Never blocks for long.
  void Notify();
  // Waits until the signal is raised or `deadline` passes; lowers it. True
  // when it was raised.
  bool WaitUntil(std::chrono::steady_clock::time_point deadline);
  bool WaitFor(std::chrono::milliseconds bound) {
    return WaitUntil(std::chrono::steady_clock::now() + bound);
  }
  // Notify() calls over the signal's life (diagnostics and tests).
  uint64_t notifications() const;
  // From now on Notify() also adds 1 to the eventfd `fd` (-1: stop), for an
  // owner that waits in poll() on sockets as well. The caller owns the fd,
  // keeps it open while set, and reads it to reset it.
  void AlsoNotifyEventFd(int fd);
  // From now on Notify() also calls `hook` (empty: stop), for an owner that
  // sleeps in another event loop (a link's I/O thread: RankAgent posts its
  // serving pump there). The hook runs on the notifying thread under the
  // signal's lock: it must be short, never block and never call this signal.
  // Once AlsoRun returns, the hook it replaced is never called again.
  void AlsoRun(std::function<void()> hook);

 private:
  mutable Mutex mu_;
  CondVar cv_;
  bool raised_ GUARDED_BY(mu_) = false;
  uint64_t notifications_ GUARDED_BY(mu_) = 0;
  int event_fd_ GUARDED_BY(mu_) = -1;
  std::function<void()> hook_ GUARDED_BY(mu_);
};

}  // namespace strata
