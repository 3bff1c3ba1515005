#include "store/base/wake_signal.h"

#include <unistd.h>

#include <cstdint>
#include <utility>

namespace strata {

void WakeSignal::Notify() {
  {
    MutexLock lock(mu_);
    raised_ = true;
    ++notifications_;
    if (event_fd_ >= 0) {
      const uint64_t one = 1;
      // A full counter (EAGAIN) is still readable: the owner wakes anyway.
      (void)!::write(event_fd_, &one, sizeof one);
    }
    if (hook_) hook_();
  }
  cv_.NotifyOne();
}

void WakeSignal::AlsoNotifyEventFd(int fd) {
  MutexLock lock(mu_);
  event_fd_ = fd;
}

void WakeSignal::AlsoRun(std::function<void()> hook) {
  MutexLock lock(mu_);
  hook_ = std::move(hook);
}

bool WakeSignal::WaitUntil(std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(mu_);
  while (!raised_) {
    if (!cv_.WaitUntil(lock, deadline)) break;
  }
  const bool raised = raised_;
  raised_ = false;
  return raised;
}

uint64_t WakeSignal::notifications() const {
  MutexLock lock(mu_);
  return notifications_;
}

}  // namespace strata
