// CudaPlanes: page planes and state rows in device memory (cuMemAlloc),
// laid out like a runtime's: plane p of page id i at base_p + i * unit_p, row
// of slot s at row_base + s * row_unit. The synthetic runtime and the GPU
// tests own their "device" memory through it; the CUDA counterpart of
// HostPlanes.
//
// Thread: any thread; each call pushes the rank's primary context for its
// duration. Reads and writes are synchronous and for setup and checks, not
// for the transfer path.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "cuda/driver_api.h"
#include "store/base/ids.h"
#include "store/record/geometry.h"
#include "store/transfer/copy_engine.h"
#include "store/transfer/device_planes.h"

namespace strata {

class CudaPlanes final : public DevicePlanes {
 public:
  // Allocates every plane and row of every rank of `geometry`; rank r lives
  // on device `device_ordinals[r]`.
  static Result<std::unique_ptr<CudaPlanes>> Create(const std::shared_ptr<const CudaDriver>& driver,
                                                    const CacheGeometry& geometry,
                                                    std::vector<int> device_ordinals);
  ~CudaPlanes() override;
  CudaPlanes(const CudaPlanes&) = delete;
  CudaPlanes& operator=(const CudaPlanes&) = delete;

  const CacheGeometry& geometry() const override { return geometry_; }
  const std::vector<int>& device_ordinals() const { return ordinals_; }
  const std::shared_ptr<const CudaDriver>& driver() const { return driver_; }
  // The plane addresses of `rank` for ThreadedTransfers.
  RankPlanes planes(uint32_t rank) const override;
  uint64_t page_address(uint32_t rank, uint32_t plane, PageId page) const;
  uint64_t row_address(uint32_t rank, StateSlot slot) const;

  // Copies host bytes to / from `device` on `rank`'s device and waits.
  Status Write(uint32_t rank, uint64_t device, std::span<const uint8_t> bytes) const;
  Status Read(uint32_t rank, uint64_t device, std::span<uint8_t> bytes) const;
  // Sets every byte of every plane and row of every rank (poisoning).
  Status Fill(uint8_t value) const;

  // DevicePlanes: one page of one plane, or one row, through Write / Read.
  Status WritePage(uint32_t rank, uint32_t plane, PageId page,
                   std::span<const uint8_t> bytes) override;
  Status ReadPage(uint32_t rank, uint32_t plane, PageId page, std::span<uint8_t> bytes) override;
  Status WriteRow(uint32_t rank, StateSlot slot, std::span<const uint8_t> bytes) override;
  Status ReadRow(uint32_t rank, StateSlot slot, std::span<uint8_t> bytes) override;

 private:
  CudaPlanes(std::shared_ptr<const CudaDriver> driver, const CacheGeometry& geometry)
      : driver_(std::move(driver)), geometry_(geometry) {}
  struct Allocation {
    uint64_t address;
    uint64_t bytes;
  };
  struct Rank {
    std::unique_ptr<PrimaryContext> context;
    std::vector<Allocation> page_planes;
    Allocation row{0, 0};
  };

  std::shared_ptr<const CudaDriver> driver_;
  CacheGeometry geometry_;
  std::vector<int> ordinals_;
  std::vector<Rank> ranks_;
};

}  // namespace strata
