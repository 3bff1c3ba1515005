#include "store/base/idle_spin.h"

#include <sched.h>

#include <thread>

namespace strata {

uint32_t UsableCpus() {
  static const uint32_t cpus = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0) {
      return static_cast<uint32_t>(CPU_COUNT(&set));
    }
    return std::max(1u, std::thread::hardware_concurrency());
  }();
  return cpus;
}

std::chrono::microseconds DefaultIdleSpin() {
  return UsableCpus() >= kIdleSpinMinCpus ? kIdleSpinBudget : std::chrono::microseconds(0);
}

}  // namespace strata
