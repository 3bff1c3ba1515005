// VmmPlanes: one rank's page planes and state row in GPU memory, owned by a
// runtime process and shared with its `strata rank` as CUDA VMM allocations
// exported as POSIX file descriptors (docs/embedding.md, "Planes in GPU
// memory"): each plane its own cuMemCreate allocation of at least its bytes
// (rounded to the device's granularity), mapped here at an address of its
// own. The synthetic runtime's planes when `strata runtime` runs with
// runtime.gpus; pages and rows are written and read through synchronous
// copies (setup and checks, not a transfer path).
//
// Thread: any thread; each call makes the device's primary context current.
#pragma once

#include <memory>
#include <vector>

#include "attach/client/attach_client.h"
#include "cuda/driver_api.h"
#include "store/transfer/device_planes.h"

namespace strata {

class VmmPlanes final : public DevicePlanes {
 public:
  // `rank` of a one-rank geometry, on device `ordinal`. Fails with the
  // driver's reason (no driver, no VMM sharing, out of memory).
  static Result<std::unique_ptr<VmmPlanes>> Create(const RankGeometry& rank, uint32_t page_tokens,
                                                   int ordinal);
  ~VmmPlanes() override;
  VmmPlanes(const VmmPlanes&) = delete;
  VmmPlanes& operator=(const VmmPlanes&) = delete;

  // The allocations to attach with (page planes in geometry order, then the
  // row); the fds stay owned here.
  std::vector<std::vector<attach::SharedAllocation>> Shared() const;

  const CacheGeometry& geometry() const override { return geometry_; }
  RankPlanes planes(uint32_t rank) const override;
  Status WritePage(uint32_t rank, uint32_t plane, PageId page,
                   std::span<const uint8_t> bytes) override;
  Status ReadPage(uint32_t rank, uint32_t plane, PageId page, std::span<uint8_t> bytes) override;
  Status WriteRow(uint32_t rank, StateSlot slot, std::span<const uint8_t> bytes) override;
  Status ReadRow(uint32_t rank, StateSlot slot, std::span<uint8_t> bytes) override;

 private:
  struct Plane {
    SizedAllocation allocation;
    CudaAllocationHandle handle = 0;
    uint64_t address = 0;  // 0 until reserved
    uint64_t bytes = 0;
    bool mapped = false;
    int fd = -1;
  };
  explicit VmmPlanes(const CacheGeometry& geometry) : geometry_(geometry) {}
  Status Add(SizedAllocation allocation, uint64_t granularity);
  Status Copy(TransferDirection direction, const Plane& plane, uint64_t offset, void* host,
              uint64_t bytes) const;

  CacheGeometry geometry_;
  int ordinal_ = 0;
  std::shared_ptr<const CudaDriver> driver_;
  std::unique_ptr<PrimaryContext> context_;
  std::vector<Plane> planes_;  // page planes, then the row
};

}  // namespace strata
