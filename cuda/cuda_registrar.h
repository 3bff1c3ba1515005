// CudaHostRegistrar: the SlabPool's HostRegistrar over cuMemHostRegister_v2
// (portable, device-mapped), registering the pool once at startup (seed 2.5).
//
// Registering host memory maps it into every device's page tables; cache
// sizing must leave each device RegistrationDeviceCostBytes of what it maps.
//
// Thread: Register/Unregister run on the store's thread; they push the
// device's primary context for the call and restore whatever was current.
#pragma once

#include <memory>
#include <unordered_map>

#include "cuda/driver_api.h"
#include "store/transfer/slab_pool.h"

namespace strata {

// Host bytes registered per device byte of page tables (2 MiB per GiB).
inline constexpr uint64_t kRegisteredBytesPerDeviceByte = 512;
// Device memory the transfer streams, events and batch arrays may use.
inline constexpr uint64_t kTransferStreamDeviceBytes = 16ull << 20;

// Device memory to leave free on each device that maps `registered_bytes` of
// host memory: 1/512 of it, rounded up, plus kTransferStreamDeviceBytes.
uint64_t RegistrationDeviceCostBytes(uint64_t registered_bytes);

class CudaHostRegistrar final : public HostRegistrar {
 public:
  // Registers through the primary context of device `ordinal` (the
  // registration is portable: every context sees it pinned).
  static Result<std::unique_ptr<CudaHostRegistrar>> Create(std::shared_ptr<const CudaDriver> driver,
                                                           int ordinal);
  // Unregisters whatever is still registered.
  ~CudaHostRegistrar() override;

  Status Register(void* base, uint64_t bytes) override;
  Status Unregister(void* base) override;
  // cuMemHostGetDevicePointer of `base` (registered here) equals `base`.
  Status CheckSameAddress(void* base) const override;

  uint64_t registered_bytes() const { return registered_bytes_; }
  // What each device pays for the registrations held now.
  uint64_t device_cost_bytes() const { return RegistrationDeviceCostBytes(registered_bytes_); }

 private:
  explicit CudaHostRegistrar(std::unique_ptr<PrimaryContext> context)
      : context_(std::move(context)) {}
  std::unique_ptr<PrimaryContext> context_;
  std::unordered_map<void*, uint64_t> regions_;  // base -> bytes
  uint64_t registered_bytes_ = 0;
};

}  // namespace strata
