#include "store/base/wake_signal.h"

namespace strata {

void WakeSignal::Notify() {
  {
    MutexLock lock(mu_);
    raised_ = true;
    ++notifications_;
  }
  cv_.NotifyOne();
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
