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

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

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
  // when it was raised. With a `spin` budget it first checks the signal
  // without sleeping for up to that long (store/base/idle_spin.h), for an
  // owner that expects a notification within microseconds.
  bool WaitUntil(std::chrono::steady_clock::time_point deadline,
                 std::chrono::nanoseconds spin = std::chrono::nanoseconds(0));
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
  // sleeps in another event loop or serves from whichever thread finished
  // the work (RankAgent answers from it, or posts to its link's I/O thread).
  // The hook runs on the notifying thread after the signal is raised, outside
  // the signal's lock. Calls may run at once on several notifying threads,
  // and a hook that notifies this signal (through what it calls) runs again,
  // nested, on its own thread: it must be safe for both, and must not block.
  // Once AlsoRun returns, the hook it replaced is never called again and no
  // call of it is still running; so AlsoRun must not be called from a hook.
  void AlsoRun(std::function<void()> hook);

 private:
  // One hook and its calls in progress (so AlsoRun can wait them out).
  struct Hook {
    explicit Hook(std::function<void()> f) : fn(std::move(f)) {}
    const std::function<void()> fn;
    Mutex mu;
    CondVar idle;
    uint32_t running GUARDED_BY(mu) = 0;
    bool detached GUARDED_BY(mu) = false;
  };
  static void Run(Hook& hook);

  mutable Mutex mu_;
  CondVar cv_;
  bool raised_ GUARDED_BY(mu_) = false;
  std::atomic<bool> raised_seen_{false};  // raised_, for a spinning wait to read
  uint64_t notifications_ GUARDED_BY(mu_) = 0;
  int event_fd_ GUARDED_BY(mu_) = -1;
  std::shared_ptr<Hook> hook_ GUARDED_BY(mu_);
};

}  // namespace strata
