// A StoreClock whose time the test sets; nothing advances it otherwise.
// Thread-safe: a transport's threads may read it while the test sets it.
#pragma once

#include <atomic>
#include <chrono>

#include "store/tier/store_clock.h"

namespace strata::testing {

class FakeStoreClock {
 public:
  using Steady = std::chrono::steady_clock;
  using Wall = std::chrono::system_clock;

  void Advance(std::chrono::microseconds d) { steady_us_ += d.count(); }
  void SetWall(Wall::time_point t) {
    wall_us_ = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  }
  Steady::time_point steady() const {
    return Steady::time_point(std::chrono::microseconds(steady_us_));
  }

  // A StoreClock reading this one; valid while this object lives.
  StoreClock clock() const {
    return {.steady = [this] { return steady(); },
            .wall = [this] { return Wall::time_point(std::chrono::microseconds(wall_us_)); }};
  }

 private:
  std::atomic<int64_t> steady_us_{1'000'000'000};  // far from zero, like a real clock
  std::atomic<int64_t> wall_us_{0};
};

}  // namespace strata::testing
