#include "launch/rank/stop_request.h"

namespace strata {

void StopRequest::Request() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    requested_.store(true);
  }
  cv_.notify_all();
}

bool StopRequest::WaitUntil(std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, deadline, [this] { return requested_.load(); });
}

}  // namespace strata
