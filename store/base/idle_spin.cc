#include "store/base/idle_spin.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
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

namespace {
std::atomic<uint32_t> spinners{0};
std::atomic<uint32_t> slots_set{0};
std::atomic<bool> spin_yield{false};
}  // namespace

uint32_t SpinSlots() {
  const uint32_t set = slots_set.load(std::memory_order_relaxed);
  return set > 0 ? set : std::max(1u, UsableCpus() / kCpusPerSpinner);
}

void SetSpinSlots(uint32_t slots) { slots_set.store(slots, std::memory_order_relaxed); }

bool SpinYields() { return spin_yield.load(std::memory_order_relaxed); }

void SetSpinYield(bool yield) { spin_yield.store(yield, std::memory_order_relaxed); }

bool TakeSpinSlot() {
  const uint32_t slots = SpinSlots();
  uint32_t n = spinners.load(std::memory_order_relaxed);
  while (n < slots) {
    if (spinners.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) return true;
  }
  return false;
}

void ReturnSpinSlot() { spinners.fetch_sub(1, std::memory_order_relaxed); }

std::chrono::microseconds DefaultIdleSpin() {
  return UsableCpus() >= kIdleSpinMinCpus ? kIdleSpinBudget : std::chrono::microseconds(0);
}

}  // namespace strata
