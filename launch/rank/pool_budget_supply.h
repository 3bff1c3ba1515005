// What a rank can give a pool registration (pool_budget.h's BudgetSupply):
// host memory from /proc/meminfo and each GPU's free memory. The parsing is
// pure; ReadHostMemory and RankBudgetSupply read the machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "coordinator/pool/pool_budget.h"

namespace strata {

struct HostMemory {
  std::optional<uint64_t> available_bytes;  // MemAvailable; absent: not in the text
  uint64_t total_bytes = 0;                 // MemTotal; 0: not in the text
};

// MemAvailable and MemTotal of /proc/meminfo's text ("Name:   N kB" lines).
HostMemory ParseMemInfo(std::string_view text);
// /proc/meminfo parsed; unreadable: nothing available (the plan is refused).
HostMemory ReadHostMemory();

// The supply now: host memory read, nothing more to allocate locally (a
// rank's tiers are allocated before it attaches), and `device_free_bytes`
// per GPU (empty: host planes).
pool::BudgetSupply RankBudgetSupply(const HostMemory& host,
                                    std::vector<uint64_t> device_free_bytes);

}  // namespace strata
