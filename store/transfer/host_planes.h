// HostPlanes: "device" planes that are ordinary host buffers, for CPU-only use
// (tests, and the demo where there is no GPU), and the Transfers over them.
#pragma once

#include <memory>
#include <vector>

#include "store/transfer/device_planes.h"
#include "store/transfer/threaded_transfers.h"

namespace strata {

class HostPlanes final : public DevicePlanes {
 public:
  explicit HostPlanes(const CacheGeometry& geometry);

  const CacheGeometry& geometry() const override { return geometry_; }
  RankPlanes planes(uint32_t rank) const override;
  Status WritePage(uint32_t rank, uint32_t plane, PageId page,
                   std::span<const uint8_t> bytes) override;
  Status ReadPage(uint32_t rank, uint32_t plane, PageId page, std::span<uint8_t> bytes) override;
  Status WriteRow(uint32_t rank, StateSlot slot, std::span<const uint8_t> bytes) override;
  Status ReadRow(uint32_t rank, StateSlot slot, std::span<uint8_t> bytes) override;

  // Direct access to the bytes of a page of a plane, and of a state row.
  uint8_t* page(uint32_t rank, uint32_t plane, PageId page);
  uint8_t* row(uint32_t rank, StateSlot slot);

 private:
  CacheGeometry geometry_;
  std::vector<std::vector<std::vector<uint8_t>>> page_planes_;  // [rank][plane]
  std::vector<std::vector<uint8_t>> rows_;                      // [rank]
};

// ThreadedTransfers over `planes` with memcpy engines. `planes` must outlive it.
Result<std::unique_ptr<Transfers>> MakeHostTransfers(HostPlanes& planes,
                                                     ThreadedTransfersOptions options = {});

}  // namespace strata
