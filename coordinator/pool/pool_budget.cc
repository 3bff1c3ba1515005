#include "coordinator/pool/pool_budget.h"

#include <string>

namespace strata::pool {
namespace {

std::string Mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

uint64_t HostBytes(const RegistrationPlan& plan) {
  uint64_t sum = 0;
  for (uint64_t region : plan.region_bytes) sum += region;
  return sum;
}

}  // namespace

uint64_t DeviceChargeBytes(const RegistrationPlan& plan) {
  uint64_t sum = 0;
  for (uint64_t region : plan.region_bytes) {
    sum += (region + kHostBytesPerDeviceByte - 1) / kHostBytesPerDeviceByte;
  }
  return sum;
}

std::optional<uint64_t> HostSupplyBytes(const BudgetSupply& supply) {
  if (!supply.available_bytes.has_value()) return std::nullopt;
  const uint64_t reserved = supply.future_local_bytes + kServerAllowanceBytes +
                            supply.total_ram_bytes / kSystemShareDivisor;
  const uint64_t available = *supply.available_bytes;
  return available > reserved ? available - reserved : 0;
}

BudgetDecision DecideBudget(const BudgetSupply& supply, const RegistrationPlan& plan) {
  BudgetDecision d;
  d.device_charge_bytes = DeviceChargeBytes(plan);
  d.host_charge_bytes = HostBytes(plan);
  if (supply.gpu_memory == GpuMemoryKind::kIntegrated && !supply.device_remaining_bytes.empty()) {
    d.host_charge_bytes += d.device_charge_bytes;  // once per host
  }
  const std::string sizes = "plan " + Mib(d.host_charge_bytes) + " of host memory in " +
                            std::to_string(plan.region_bytes.size()) + " regions, " +
                            Mib(d.device_charge_bytes) + " on each GPU";
  const std::optional<uint64_t> host_supply = HostSupplyBytes(supply);
  if (!host_supply.has_value()) {
    d.verdict = BudgetVerdict::kSupplyUnknown;
    d.warning = "prefix cache pool refused: available host memory could not be read (" + sizes +
                "); using local tiers";
    return d;
  }
  d.host_supply_bytes = *host_supply;
  if (d.host_charge_bytes > d.host_supply_bytes) {
    d.verdict = BudgetVerdict::kHostShort;
    d.warning = "prefix cache pool refused: " + sizes + " exceeds the host supply of " +
                Mib(d.host_supply_bytes) + "; using local tiers";
    return d;
  }
  for (size_t gpu = 0; gpu < supply.device_remaining_bytes.size(); ++gpu) {
    if (d.device_charge_bytes > supply.device_remaining_bytes[gpu]) {
      d.verdict = BudgetVerdict::kDeviceShort;
      d.short_gpu = static_cast<uint32_t>(gpu);
      d.warning = "prefix cache pool refused: " + sizes + " exceeds the " +
                  Mib(supply.device_remaining_bytes[gpu]) + " left on GPU " + std::to_string(gpu) +
                  "; using local tiers";
      return d;
    }
  }
  return d;
}

}  // namespace strata::pool
