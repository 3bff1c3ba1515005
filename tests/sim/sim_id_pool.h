// SimIdPool: the simulated store's device ids (pages or state slots), each
// held by at most one job. A job's ids go back only when the store releases
// them (its completion); the simulation checks that every id a rank may
// still touch is held for that rank's job.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tests/sim/sim_random.h"

namespace strata::sim {

class SimIdPool {
 public:
  explicit SimIdPool(uint32_t size) : owner_(size, 0) {}

  // `n` free ids, chosen at random, now held by `job`; nullopt (nothing
  // held) when fewer are free.
  std::optional<std::vector<uint32_t>> Acquire(uint32_t n, uint64_t job, SimRandom& random) {
    std::vector<uint32_t> free;
    for (uint32_t i = 0; i < owner_.size(); ++i) {
      if (owner_[i] == 0) free.push_back(i);
    }
    if (free.size() < n) return std::nullopt;
    std::vector<uint32_t> out;
    for (uint32_t k = 0; k < n; ++k) {
      const size_t at = k + random.Below(free.size() - k);
      std::swap(free[k], free[at]);
      owner_[free[k]] = job;
      out.push_back(free[k]);
    }
    return out;
  }
  void Release(uint64_t job) {
    for (uint64_t& o : owner_) {
      if (o == job) o = 0;
    }
  }
  // The job holding `id` (0: free); ids out of range are held by nobody.
  uint64_t Owner(uint32_t id) const { return id < owner_.size() ? owner_[id] : 0; }

 private:
  std::vector<uint64_t> owner_;  // by id; 0 = free (job ids start at 1)
};

}  // namespace strata::sim
