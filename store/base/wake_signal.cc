#include "store/base/wake_signal.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "store/base/idle_spin.h"

namespace strata {

void WakeSignal::Notify() {
  std::shared_ptr<Hook> hook;
  {
    MutexLock lock(mu_);
    raised_ = true;
    raised_seen_.store(true, std::memory_order_release);
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

bool WakeSignal::WaitUntil(std::chrono::steady_clock::time_point deadline,
                           std::chrono::nanoseconds spin) {
  if (spin.count() > 0) {
    spin = std::min(spin, std::chrono::duration_cast<std::chrono::nanoseconds>(
                              deadline - std::chrono::steady_clock::now()));
    (void)SpinUntil(spin, [this] { return raised_seen_.load(std::memory_order_acquire); });
  }
  MutexLock lock(mu_);
  while (!raised_) {
    if (!cv_.WaitUntil(lock, deadline)) break;
  }
  const bool raised = raised_;
  raised_ = false;
  raised_seen_.store(false, std::memory_order_relaxed);
  return raised;
}

uint64_t WakeSignal::notifications() const {
  MutexLock lock(mu_);
  return notifications_;
}

}  // namespace strata
