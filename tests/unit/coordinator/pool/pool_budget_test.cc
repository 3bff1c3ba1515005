#include "coordinator/pool/pool_budget.h"

#include <gtest/gtest.h>

namespace strata::pool {
namespace {

constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kMiB = 1ull << 20;

TEST(PoolBudgetTest, DeviceChargeRoundsEachRegionUp) {
  struct Case {
    std::vector<uint64_t> regions;
    uint64_t want;
  };
  const Case cases[] = {
      {{}, 0},
      {{1}, 1},
      {{512}, 1},
      {{513}, 2},
      {{1, 1}, 2},  // rounded separately, not as 2 bytes -> 1
      {{kGiB}, 2 * kMiB},
      {{kGiB, 100}, 2 * kMiB + 1},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DeviceChargeBytes({.region_bytes = c.regions}), c.want)
        << c.regions.size() << " regions";
  }
}

TEST(PoolBudgetTest, HostSupplySubtractsAllowanceAndSystemShare) {
  struct Case {
    std::optional<uint64_t> available;
    uint64_t total;
    uint64_t future;
    std::optional<uint64_t> want;
  };
  const Case cases[] = {
      {std::nullopt, 64 * kGiB, 0, std::nullopt},
      // 40 - 2 - 64/20 (3.2) = 34.8 GiB
      {40 * kGiB, 64 * kGiB, 0, 40 * kGiB - 2 * kGiB - 64 * kGiB / 20},
      {40 * kGiB, 64 * kGiB, 10 * kGiB, 30 * kGiB - 2 * kGiB - 64 * kGiB / 20},
      {kGiB, 64 * kGiB, 0, 0},  // floored, never wraps
  };
  for (const Case& c : cases) {
    BudgetSupply supply;
    supply.available_bytes = c.available;
    supply.total_ram_bytes = c.total;
    supply.future_local_bytes = c.future;
    EXPECT_EQ(HostSupplyBytes(supply), c.want);
  }
}

TEST(PoolBudgetTest, DecidesTheWholePlan) {
  BudgetSupply host;
  host.available_bytes = 40 * kGiB;
  host.total_ram_bytes = 64 * kGiB;
  host.device_remaining_bytes = {64 * kMiB, 64 * kMiB};
  struct Case {
    const char* name;
    BudgetSupply supply;
    std::vector<uint64_t> regions;
    BudgetVerdict want;
    std::optional<uint32_t> short_gpu;
  };
  BudgetSupply tight_gpu = host;
  tight_gpu.device_remaining_bytes = {64 * kMiB, 1 * kMiB};
  BudgetSupply unknown = host;
  unknown.available_bytes.reset();
  BudgetSupply integrated = host;
  integrated.gpu_memory = GpuMemoryKind::kIntegrated;
  integrated.available_bytes = 2 * kGiB + 64 * kGiB / 20 + 16 * kGiB;  // supply 16 GiB exactly
  const Case cases[] = {
      {"fits", host, {16 * kGiB, 64 * kMiB}, BudgetVerdict::kFits, {}},
      {"host short", host, {40 * kGiB}, BudgetVerdict::kHostShort, {}},
      {"second gpu short", tight_gpu, {16 * kGiB}, BudgetVerdict::kDeviceShort, 1u},
      {"supply unknown", unknown, {kMiB}, BudgetVerdict::kSupplyUnknown, {}},
      // 16 GiB + its 32 MiB device charge no longer fits 16 GiB of supply.
      {"integrated charges host", integrated, {16 * kGiB}, BudgetVerdict::kHostShort, {}},
  };
  for (const Case& c : cases) {
    const BudgetDecision d = DecideBudget(c.supply, {.region_bytes = c.regions});
    EXPECT_EQ(d.verdict, c.want) << c.name;
    EXPECT_EQ(d.short_gpu, c.short_gpu) << c.name;
    EXPECT_EQ(d.fits(), d.warning.empty()) << c.name << ": one warning exactly when refused";
  }
}

TEST(PoolBudgetTest, RefusalWarningNamesTheSizes) {
  BudgetSupply supply;
  supply.available_bytes = 8 * kGiB;
  supply.total_ram_bytes = 64 * kGiB;
  const BudgetDecision d = DecideBudget(supply, {.region_bytes = {6 * kGiB}});
  ASSERT_EQ(d.verdict, BudgetVerdict::kHostShort);
  EXPECT_NE(d.warning.find("6144 MiB"), std::string::npos) << d.warning;
  EXPECT_NE(d.warning.find("12 MiB on each GPU"), std::string::npos) << d.warning;
  EXPECT_NE(d.warning.find("host supply of 2867 MiB"), std::string::npos) << d.warning;
}

}  // namespace
}  // namespace strata::pool
