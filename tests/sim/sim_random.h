// SimRandom: the simulation's only source of randomness, a splitmix64
// stream. Its own helpers (not <random>'s distributions, whose output
// differs between standard libraries) make a seed replay the same run on
// every machine.
#pragma once

#include <cstdint>

namespace strata::sim {

class SimRandom {
 public:
  explicit SimRandom(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); 0 when n is 0.
  uint64_t Below(uint64_t n) {
    if (n == 0) return 0;
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  // Uniform in [lo, hi].
  uint64_t Between(uint64_t lo, uint64_t hi) { return lo + Below(hi - lo + 1); }
  // True with probability `p` (0..1).
  bool Chance(double p) { return static_cast<double>(Next() >> 11) * 0x1.0p-53 < p; }

 private:
  uint64_t state_;
};

}  // namespace strata::sim
