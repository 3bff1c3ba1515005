#include "launch/rank/stop_request.h"

namespace strata {

void StopRequest::Request() {
  {
    MutexLock lock(mu_);
    requested_.store(true);
  }
  cv_.NotifyAll();
}

bool StopRequest::WaitUntil(std::chrono::steady_clock::time_point deadline) const {
  MutexLock lock(mu_);
  while (!requested_.load() && cv_.WaitUntil(lock, deadline)) {
  }
  return requested_.load();
}

}  // namespace strata
