// The clocks a store reads, injected through its options so that a test can
// move time by hand (STYLE.md 4). The defaults read the real clocks, so a
// caller that sets nothing gets today's behaviour.
//
// Record ages and retry backoff do not come from here: they follow the
// `now_ms` a caller passes to HostStore::Poll.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>

namespace strata {

struct StoreClock {
  // Monotonic time: deadlines (Close, WaitIdle, drains) and operation latencies.
  std::function<std::chrono::steady_clock::time_point()> steady = [] {
    return std::chrono::steady_clock::now();
  };
  // Wall time: the creation time written into record headers.
  std::function<std::chrono::system_clock::time_point()> wall = [] {
    return std::chrono::system_clock::now();
  };

  // Milliseconds from now until `deadline`, at least 1 (a bound to hand to a
  // wait that treats 0 as "do not wait").
  std::chrono::milliseconds LeftUntil(std::chrono::steady_clock::time_point deadline) const {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady()));
  }
};

}  // namespace strata
