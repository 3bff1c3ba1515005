// Planes in this process's address space: HostAddressPlanes addresses them
// (accessors, RankPlanes, memcpy transfers) given one base address per page
// plane and row plane; HostPlanes owns ordinary host buffers behind them
// (CPU-only tests, and the demo where there is no GPU); attach/'s
// ImportedPlanes maps a runtime process's shared memory there.
#pragma once

#include <memory>
#include <vector>

#include "store/transfer/device_planes.h"
#include "store/transfer/threaded_transfers.h"

namespace strata {

class HostAddressPlanes : public DevicePlanes {
 public:
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

 protected:
  explicit HostAddressPlanes(const CacheGeometry& geometry);
  // Set once by the derived constructor; the addresses never change after.
  void SetBases(std::vector<std::vector<uint8_t*>> page_bases, std::vector<uint8_t*> row_bases);
  // Whether the accessors may touch the memory now (Ok by default).
  virtual Status CheckAccessible() const { return Status::Ok(); }

 private:
  CacheGeometry geometry_;
  std::vector<std::vector<uint8_t*>> page_bases_;  // [rank][plane]
  std::vector<uint8_t*> row_bases_;                // [rank]
};

class HostPlanes final : public HostAddressPlanes {
 public:
  explicit HostPlanes(const CacheGeometry& geometry);

 private:
  std::vector<std::vector<std::vector<uint8_t>>> page_planes_;  // [rank][plane]
  std::vector<std::vector<uint8_t>> rows_;                      // [rank]
};

// ThreadedTransfers over `planes` with memcpy engines. `planes` must outlive it.
Result<std::unique_ptr<Transfers>> MakeHostTransfers(HostAddressPlanes& planes,
                                                     ThreadedTransfersOptions options = {});

}  // namespace strata
