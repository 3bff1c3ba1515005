#include "store/base/wake_signal.h"

namespace strata {

void WakeSignal::Notify() {
  {
    std::lock_guard lock(mu_);
    raised_ = true;
    ++notifications_;
  }
  cv_.notify_one();
}

bool WakeSignal::WaitUntil(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  const bool raised = cv_.wait_until(lock, deadline, [&] { return raised_; });
  raised_ = false;
  return raised;
}

uint64_t WakeSignal::notifications() const {
  std::lock_guard lock(mu_);
  return notifications_;
}

}  // namespace strata
