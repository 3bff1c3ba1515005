#include "store/base/wake_signal.h"

#include <unistd.h>

#include <cstdint>
#include <utility>

namespace strata {

void WakeSignal::Notify() {
  std::shared_ptr<Hook> hook;
  {
    MutexLock lock(mu_);
    raised_ = true;
    ++notifications_;
    if (event_fd_ >= 0) {
      const uint64_t one = 1;
      // A full counter (EAGAIN) is still readable: the owner wakes anyway.
      (void)!::write(event_fd_, &one, sizeof one);
    }
    hook = hook_;
  }
  cv_.NotifyOne();
  if (hook) Run(*hook);
}

void WakeSignal::Run(Hook& hook) {
  {
    MutexLock lock(hook.mu);
    if (hook.detached) return;
    ++hook.running;
  }
  hook.fn();
  MutexLock lock(hook.mu);
  if (--hook.running == 0) hook.idle.NotifyAll();
}

void WakeSignal::AlsoNotifyEventFd(int fd) {
  MutexLock lock(mu_);
  event_fd_ = fd;
}

void WakeSignal::AlsoRun(std::function<void()> hook) {
  std::shared_ptr<Hook> old;
  {
    MutexLock lock(mu_);
    old = std::move(hook_);
    hook_ = hook ? std::make_shared<Hook>(std::move(hook)) : nullptr;
  }
  if (!old) return;
  MutexLock lock(old->mu);
  old->detached = true;
  while (old->running != 0) old->idle.Wait(lock);
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
