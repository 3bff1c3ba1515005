// The registration budget of a pool attachment (seed 2.15, "Before any CUDA
// registration"), as pure logic: whether the whole plan the manager's Hello
// announces fits the host and every GPU before anything is registered.
//
//   host supply  = available memory - future local host allocations
//                  - kServerAllowanceBytes - total RAM / kSystemShareDivisor
//   device charge (each GPU) = sum over regions of ceil(region / 512)
//
// Integrated GPUs share host memory, so their device charge is added to the
// host charge once per host. A plan that does not fit registers nothing and
// yields one warning naming its sizes and the reason. No I/O, threads or clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::pool {

// Left to the server process itself (its heap, threads, the runtime).
inline constexpr uint64_t kServerAllowanceBytes = 2ull << 30;
// total RAM / 20 = 5% kept for the system.
inline constexpr uint64_t kSystemShareDivisor = 20;
// One device byte is charged per this many registered host bytes.
inline constexpr uint64_t kHostBytesPerDeviceByte = 512;

// Whether the GPUs have memory of their own or share the host's.
enum class GpuMemoryKind : uint8_t { kDiscrete, kIntegrated };

// What the host and devices can give, as observed by the caller.
struct BudgetSupply {
  // Available physical memory (MemAvailable); absent when it could not be read,
  // which refuses the plan.
  std::optional<uint64_t> available_bytes;
  uint64_t total_ram_bytes = 0;
  // Host memory the instance will still allocate for its local tiers.
  uint64_t future_local_bytes = 0;
  // Per GPU: device bytes left after runtime headroom, explicit limits and
  // minimum execution/KV capacity. Empty for an instance without GPUs.
  std::vector<uint64_t> device_remaining_bytes;
  GpuMemoryKind gpu_memory = GpuMemoryKind::kDiscrete;
};

// What the plan registers: every host region (the manager's arena and staging
// on this host, or the client's own staging for a remote manager).
struct RegistrationPlan {
  std::vector<uint64_t> region_bytes;
};

enum class BudgetVerdict : uint8_t { kFits, kHostShort, kDeviceShort, kSupplyUnknown };

struct BudgetDecision {
  BudgetVerdict verdict = BudgetVerdict::kFits;
  uint64_t host_charge_bytes = 0;    // registered host bytes (+ integrated device charge)
  uint64_t host_supply_bytes = 0;    // 0 when unknown or exhausted
  uint64_t device_charge_bytes = 0;  // charged to each GPU
  // The GPU that does not fit (kDeviceShort).
  std::optional<uint32_t> short_gpu;
  // Empty when the plan fits; otherwise the one warning to print.
  std::string warning;

  bool fits() const { return verdict == BudgetVerdict::kFits; }
};

// ceil(region / 512) summed over the regions, each rounded on its own.
uint64_t DeviceChargeBytes(const RegistrationPlan& plan);

// The host supply formula above, floored at 0; absent when available memory is.
std::optional<uint64_t> HostSupplyBytes(const BudgetSupply& supply);

// Decides the whole plan: it fits only when the host charge fits the host
// supply and the device charge fits every GPU's remaining bytes.
BudgetDecision DecideBudget(const BudgetSupply& supply, const RegistrationPlan& plan);

}  // namespace strata::pool
