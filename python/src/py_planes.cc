#include "python/src/py_planes.h"

#include <map>

#include "cuda/cuda_registrar.h"
#include "cuda/cuda_transfers.h"
#include "store/transfer/host_planes.h"

namespace strata::python {

namespace {

// Host planes at the runtime's own addresses.
class BorrowedHostPlanes final : public HostAddressPlanes {
 public:
  BorrowedHostPlanes(const CacheGeometry& geometry, const RankPlanes& addresses)
      : HostAddressPlanes(geometry) {
    std::vector<uint8_t*> pages;
    for (uint64_t a : addresses.page_plane_base) pages.push_back(reinterpret_cast<uint8_t*>(a));
    SetBases({pages}, {reinterpret_cast<uint8_t*>(addresses.row_base)});
  }
};

class HostRuntimePlanes final : public RuntimePlanes {
 public:
  HostRuntimePlanes(CacheGeometry geometry, RankPlanes addresses)
      : RuntimePlanes(std::move(geometry), std::move(addresses), PlaneDevice{}),
        planes_(geometry_, addresses_) {}
  Result<std::unique_ptr<Transfers>> MakeTransfers() override {
    return MakeHostTransfers(planes_, threads_);
  }
  HostRegistrar* registrar() override { return nullptr; }

 private:
  BorrowedHostPlanes planes_;
};

class CudaRuntimePlanes final : public RuntimePlanes {
 public:
  CudaRuntimePlanes(CacheGeometry geometry, RankPlanes addresses, PlaneDevice device)
      : RuntimePlanes(std::move(geometry), std::move(addresses), device) {}
  Status Open() {
    STRATA_ASSIGN_OR_RETURN(driver_, CudaDriver::Load());
    STRATA_ASSIGN_OR_RETURN(registrar_, CudaHostRegistrar::Create(driver_, device_.cuda_ordinal));
    return Status::Ok();
  }
  Result<std::unique_ptr<Transfers>> MakeTransfers() override {
    CudaTransfersOptions options;
    options.device_ordinals = {device_.cuda_ordinal};
    options.threads = threads_;
    return MakeCudaTransfers(driver_, geometry_, {addresses_}, options);
  }
  HostRegistrar* registrar() override { return registrar_.get(); }

 private:
  std::shared_ptr<const CudaDriver> driver_;
  std::unique_ptr<CudaHostRegistrar> registrar_;
};

Status CheckAllocation(const AllocationIn& a) {
  const std::string who = "allocation '" + a.name + "'";
  if (a.unit_bytes == 0 || a.count == 0) {
    return Status::InvalidArgument(who + ": bytes per id and count must be nonzero");
  }
  if (a.owner == MemoryOwner::kPeer) return Status::Ok();
  if (a.address == 0) return Status::InvalidArgument(who + ": null address");
  if (a.unit_bytes > a.capacity / a.count) {
    return Status::InvalidArgument(who + " declares " + std::to_string(a.count) + " x " +
                                   std::to_string(a.unit_bytes) + " bytes but its memory holds " +
                                   std::to_string(a.capacity));
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<RuntimePlanes>> RuntimePlanes::Create(
    uint32_t page_tokens, const std::vector<AllocationIn>& allocations, PlaneDevice device) {
  std::vector<SizedAllocation> sized;
  std::map<std::string, uint64_t> page_address;
  uint64_t row_address = 0;
  for (const AllocationIn& a : allocations) {
    STRATA_RETURN_IF_ERROR(CheckAllocation(a));
    sized.push_back({a.name, a.group, a.unit_bytes, a.count, a.owner});
    if (a.owner == MemoryOwner::kPeer) continue;
    if (a.group == AllocationGroup::kStateRows) {
      row_address = a.address;
    } else if (!page_address.emplace(a.name, a.address).second) {
      return Status::InvalidArgument("allocation '" + a.name + "' is named twice");
    }
  }
  STRATA_ASSIGN_OR_RETURN(RankGeometry rank, RankGeometryFromAllocations(sized));
  CacheGeometry geometry{page_tokens, {rank}};
  STRATA_RETURN_IF_ERROR(ValidateGeometry(geometry));
  RankPlanes addresses;
  for (const PlaneSpec& p : rank.page_planes)
    addresses.page_plane_base.push_back(page_address.at(p.name));
  addresses.row_base = row_address;
  if (!device.is_cuda()) {
    return std::unique_ptr<RuntimePlanes>(new HostRuntimePlanes(geometry, addresses));
  }
  auto cuda =
      std::unique_ptr<CudaRuntimePlanes>(new CudaRuntimePlanes(geometry, addresses, device));
  STRATA_RETURN_IF_ERROR(cuda->Open());
  return std::unique_ptr<RuntimePlanes>(std::move(cuda));
}

}  // namespace strata::python
