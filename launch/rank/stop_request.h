// StopRequest: a process's sticky "please stop" flag that threads wait on,
// with a bound, instead of sleeping and polling. Set by the signal watcher
// (stop_on_signals.h); read by the workloads and the synthetic runtime's
// interrupt.
//
// Thread: every method from any thread.
#pragma once

#include <atomic>
#include <chrono>

#include "store/base/mutex.h"

namespace strata {

class StopRequest {
 public:
  StopRequest() = default;
  StopRequest(const StopRequest&) = delete;
  StopRequest& operator=(const StopRequest&) = delete;

  // Sets the flag (later calls change nothing) and wakes every waiter.
  void Request();
  // Never blocks.
  bool requested() const { return requested_.load(); }
  // Waits until a stop is requested or `deadline` passes; true when one was
  // requested. Returns at once when one already was.
  bool WaitUntil(std::chrono::steady_clock::time_point deadline) const;

 private:
  mutable Mutex mu_;
  mutable CondVar cv_;
  // Written under mu_ so a waiter between its check and its wait is woken.
  std::atomic<bool> requested_{false};
};

}  // namespace strata
