// splitmix64: the one small, reproducible random stream every seeded part of
// Strata uses (the synthetic runtime's token streams, fault plans, seeded
// nonces, benchmarks, the simulation). The same seed gives the same values
// on every machine: the helpers below are ours, not <random>'s
// distributions, whose output differs between standard libraries. Not for
// secrets.
#pragma once

#include <cstdint>

namespace strata {

// Advances `state` and returns the next value of its stream.
constexpr uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// One step from `x`: a well-mixed value that depends on `x` alone.
constexpr uint64_t SplitMix64Of(uint64_t x) { return SplitMix64(x); }

class SplitMixRandom {
 public:
  explicit SplitMixRandom(uint64_t seed) : state_(seed) {}

  uint64_t Next() { return SplitMix64(state_); }
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

}  // namespace strata
