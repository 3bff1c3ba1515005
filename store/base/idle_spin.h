// Idle spinning: a thread that expects work within microseconds (the next job
// of a stream, the answers to a job it just sent) checks for it for a short,
// bounded time before it sleeps. A hand-off then costs a memory read instead
// of waking a sleeping thread on another core, which on these machines' idle
// virtual CPUs costs 5-20 us each (docs/performance.md, "Idle spinning").
//
// The cost is CPU: up to one budget per idle period of each spinning thread.
// A spinning thread on a machine with few cores takes the core the awaited
// thread needs, so the default budget is zero there, and at most one thread
// per kCpusPerSpinner usable CPUs spins at once (the others sleep at once).
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

namespace strata {

// Tells the core this thread is spinning (x86 PAUSE, Arm YIELD).
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// At most one spinning thread per this many usable CPUs in the process (at
// least one): more would take the cores the awaited threads need.
inline constexpr uint32_t kCpusPerSpinner = 4;

// A process-wide slot to spin in (SpinSlots()); false when every slot is
// taken, and then the caller does not spin. Return a taken slot.
bool TakeSpinSlot();
void ReturnSpinSlot();
// How many threads of this process may spin at once: `slots` when set
// (SetSpinSlots, any thread, before or between spins; 0 restores the
// default), else UsableCpus() / kCpusPerSpinner, at least one.
uint32_t SpinSlots();
void SetSpinSlots(uint32_t slots);

// Whether a spinning thread yields its CPU (sched_yield) at each clock read,
// so that a woken thread queued on that CPU runs at once instead of waiting
// for the spinner's time slice. Default off; any thread, before or between
// spins. Off, a process whose spinners fill every CPU delays the threads they
// wait for (docs/performance.md, "Spinning link I/O threads").
bool SpinYields();
void SetSpinYield(bool yield);

// SetSpinSlots(slots) for its scope, then the default again, however the
// scope ends (a test that fails or skips early).
class ScopedSpinSlots {
 public:
  explicit ScopedSpinSlots(uint32_t slots) { SetSpinSlots(slots); }
  ~ScopedSpinSlots() { SetSpinSlots(0); }
  ScopedSpinSlots(const ScopedSpinSlots&) = delete;
  ScopedSpinSlots& operator=(const ScopedSpinSlots&) = delete;
};

// How many checks a spin makes between clock reads: a check that is a load
// costs ~1 ns and a clock read ~20 ns; a check that is a syscall pass 1.
inline constexpr uint32_t kChecksPerClockRead = 32;

// Calls `ready` until it returns true or `budget` passes; true when it did.
// A zero budget, or no free spin slot, calls it once. The slot is returned
// also when `ready` throws. With SpinYields(), it yields the CPU at each
// clock read.
template <typename Ready>
bool SpinUntil(std::chrono::nanoseconds budget, Ready&& ready,
               uint32_t checks_per_clock_read = kChecksPerClockRead) {
  if (ready()) return true;
  if (budget.count() <= 0 || !TakeSpinSlot()) return false;
  struct SlotHeld {
    SlotHeld() = default;
    SlotHeld(const SlotHeld&) = delete;
    SlotHeld& operator=(const SlotHeld&) = delete;
    ~SlotHeld() { ReturnSpinSlot(); }
  } held;
  const auto end = std::chrono::steady_clock::now() + budget;
  const bool yield = SpinYields();
  for (uint32_t i = 1;; ++i) {
    CpuRelax();
    if (ready()) return true;
    if (i % checks_per_clock_read == 0) {
      if (std::chrono::steady_clock::now() >= end) return false;
      if (yield) std::this_thread::yield();
    }
  }
}

// Below this many CPUs in the process's affinity set, nothing spins.
inline constexpr uint32_t kIdleSpinMinCpus = 8;
// The budget on machines with kIdleSpinMinCpus or more.
inline constexpr std::chrono::microseconds kIdleSpinBudget{100};
// The most a configured budget may be.
inline constexpr uint32_t kIdleSpinMaxUs = 10'000;

// CPUs this process may run on (sched_getaffinity), read once.
uint32_t UsableCpus();
// kIdleSpinBudget with at least kIdleSpinMinCpus usable CPUs, else zero: the
// default of the disk thread's idle spin and of a transport owner's wait. A
// record link's I/O thread does not spin unless asked (LinkOptions).
std::chrono::microseconds DefaultIdleSpin();

}  // namespace strata
