// ImportedDevicePlanes: an attached runtime's planes in GPU memory, shared as
// CUDA VMM allocations exported to POSIX file descriptors (one allocation per
// page plane and per row plane, each at least the plane's bytes;
// docs/embedding.md). Reserve takes one device address range per plane of
// every rank (no memory); Import maps a runtime's allocations over them
// (cuMemImportFromShareableHandle, cuMemMap, cuMemSetAccess for the rank's
// device) after checking each lives on that rank's device; Release unmaps
// them. The addresses never change, so the CudaTransfers built once over
// planes() outlive every runtime.
//
// Contract: as PlaneImporter's — Release only once no copy uses the planes.
// The page and row accessors copy synchronously (tests, checks) and are
// refused while nothing is imported. Thread: the owner's.
#pragma once

#include <memory>
#include <vector>

#include "cuda/driver_api.h"
#include "store/transfer/device_planes.h"
#include "store/transfer/plane_importer.h"

namespace strata {

class ImportedDevicePlanes final : public DevicePlanes, public PlaneImporter {
 public:
  // Rank r's planes are on device `device_ordinals[r]`. Fails without VMM
  // handle sharing in the driver.
  static Result<std::unique_ptr<ImportedDevicePlanes>> Reserve(
      std::shared_ptr<const CudaDriver> driver, const CacheGeometry& geometry,
      std::vector<int> device_ordinals);
  ~ImportedDevicePlanes() override;
  ImportedDevicePlanes(const ImportedDevicePlanes&) = delete;
  ImportedDevicePlanes& operator=(const ImportedDevicePlanes&) = delete;

  const std::vector<int>& device_ordinals() const { return ordinals_; }
  const std::shared_ptr<const CudaDriver>& driver() const { return driver_; }
  // Bytes each plane's shared allocation is mapped with: its bytes rounded
  // up to the device's allocation granularity (what a runtime allocates).
  uint64_t mapped_bytes(uint32_t rank, std::optional<uint32_t> page_plane) const;

  // DevicePlanes.
  const CacheGeometry& geometry() const override { return geometry_; }
  RankPlanes planes(uint32_t rank) const override;
  Status WritePage(uint32_t rank, uint32_t plane, PageId page,
                   std::span<const uint8_t> bytes) override;
  Status ReadPage(uint32_t rank, uint32_t plane, PageId page, std::span<uint8_t> bytes) override;
  Status WriteRow(uint32_t rank, StateSlot slot, std::span<const uint8_t> bytes) override;
  Status ReadRow(uint32_t rank, StateSlot slot, std::span<uint8_t> bytes) override;

  // PlaneImporter (CUDA VMM file descriptors).
  const CacheGeometry& shared_geometry() const override { return geometry_; }
  std::vector<PlaneHandleKind> handle_kinds() const override {
    return {PlaneHandleKind::kCudaVmmFd};
  }
  Status Import(std::span<const PlaneFd> fds) override;
  void Release() override;
  bool imported() const override { return imported_; }

 private:
  struct Range {
    uint64_t base = 0;
    uint64_t bytes = 0;  // reserved and mapped: the plane rounded to granularity
    bool mapped = false;
  };
  struct Rank {
    std::unique_ptr<PrimaryContext> context;
    std::vector<Range> page_planes;
    Range row;
  };

  ImportedDevicePlanes(std::shared_ptr<const CudaDriver> driver, const CacheGeometry& geometry)
      : driver_(std::move(driver)), geometry_(geometry) {}
  Range& RangeOf(const PlaneFd& fd);
  Status MapOne(uint32_t rank, Range& range, int fd);
  Status Copy(uint32_t rank, TransferDirection direction, uint64_t device, uint8_t* host,
              uint64_t bytes) const;

  std::shared_ptr<const CudaDriver> driver_;
  CacheGeometry geometry_;
  std::vector<int> ordinals_;
  std::vector<Rank> ranks_;
  bool imported_ = false;
};

}  // namespace strata
