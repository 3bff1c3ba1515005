#include "launch/rank/pool_budget_supply.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(PoolBudgetSupplyTest, ParsesMemInfo) {
  struct Case {
    const char* name;
    const char* text;
    std::optional<uint64_t> available;
    uint64_t total;
  };
  const Case cases[] = {
      {"both", "MemTotal:       16384 kB\nMemFree:   100 kB\nMemAvailable:    8192 kB\n",
       8192ull * 1024, 16384ull * 1024},
      {"no trailing newline", "MemAvailable: 1 kB\nMemTotal: 2 kB", 1024, 2048},
      {"no MemAvailable (old kernels)", "MemTotal: 2 kB\nMemFree: 1 kB\n", std::nullopt, 2048},
      {"a prefix of another name does not count", "MemAvailableX: 5 kB\nMemTotal: 2 kB\n",
       std::nullopt, 2048},
      {"no unit", "MemAvailable: 5\nMemTotal: 2 kB\n", std::nullopt, 2048},
      {"not a number", "MemAvailable: lots kB\n", std::nullopt, 0},
      {"empty", "", std::nullopt, 0},
  };
  for (const Case& c : cases) {
    const HostMemory m = ParseMemInfo(c.text);
    EXPECT_EQ(m.available_bytes, c.available) << c.name;
    EXPECT_EQ(m.total_bytes, c.total) << c.name;
  }
}

TEST(PoolBudgetSupplyTest, TheRankSupplyCarriesHostAndGpus) {
  const pool::BudgetSupply s =
      RankBudgetSupply(HostMemory{.available_bytes = 10, .total_bytes = 20}, {5, 6});
  EXPECT_EQ(s.available_bytes, 10u);
  EXPECT_EQ(s.total_ram_bytes, 20u);
  EXPECT_EQ(s.future_local_bytes, 0u);
  EXPECT_EQ(s.device_remaining_bytes, (std::vector<uint64_t>{5, 6}));
}

TEST(PoolBudgetSupplyTest, ThisMachinesMemInfoReads) {
  const HostMemory m = ReadHostMemory();
  ASSERT_TRUE(m.available_bytes.has_value());
  EXPECT_GT(m.total_bytes, 0u);
  EXPECT_LE(*m.available_bytes, m.total_bytes);
}

}  // namespace
}  // namespace strata
