// ImportedIpcPlanes: an attached runtime's planes in cudaMalloc'd GPU memory
// (PyTorch's caching allocator), shared by legacy CUDA IPC handles
// (cuIpcGetMemHandle; docs/embedding.md). Import opens each plane's handle
// with cuIpcOpenMemHandle on its rank's primary context; the driver picks
// where it lands, so, unlike the memfd and VMM importers, the addresses
// change with every attach. The importer is therefore a PlaneBaseSource
// (store/transfer/plane_bases.h): the transfers built once over it read the
// bases per job, and each job keeps the bases of the attachment it was
// submitted under.
//
// Import refuses a block of another device than the rank's (copies would
// cross the peer link) and a plane that would run past its block's end.
//
// Contract: Release (cuIpcCloseMemHandle of every opened block) only once
// no copy uses the planes: the attach session shuts the gate and drains
// first, exactly as for VMM planes, and a job is refused while nothing is
// imported. Two planes in one cudaMalloc block are opened once (the driver
// refuses a second open of one block in one context) and closed once.
// Thread: Import/Release on the owner's thread; current_bases from any.
#pragma once

#include <memory>
#include <vector>

#include "cuda/driver_api.h"
#include "store/base/mutex.h"
#include "store/transfer/plane_bases.h"
#include "store/transfer/plane_importer.h"

namespace strata {

class ImportedIpcPlanes final : public PlaneImporter, public PlaneBaseSource {
 public:
  // Rank r's planes are opened on device `device_ordinals[r]`'s primary
  // context. Fails without legacy IPC in the driver.
  static Result<std::unique_ptr<ImportedIpcPlanes>> Create(
      const std::shared_ptr<const CudaDriver>& driver, const CacheGeometry& geometry,
      std::vector<int> device_ordinals);
  ~ImportedIpcPlanes() override;
  ImportedIpcPlanes(const ImportedIpcPlanes&) = delete;
  ImportedIpcPlanes& operator=(const ImportedIpcPlanes&) = delete;

  const std::vector<int>& device_ordinals() const { return ordinals_; }

  // PlaneImporter (legacy CUDA IPC handles: every PlaneFd carries `ipc`).
  const CacheGeometry& shared_geometry() const override { return geometry_; }
  std::vector<PlaneHandleKind> handle_kinds() const override { return {PlaneHandleKind::kCudaIpc}; }
  Status Import(std::span<const PlaneFd> fds) override;
  void Release() override;
  bool imported() const override { return imported_; }

  // PlaneBaseSource: the opened bases (plus each plane's offset), null
  // while nothing is imported.
  std::shared_ptr<const PlaneBases> current_bases() const override;

 private:
  struct Opened {
    uint32_t rank = 0;
    IpcMemHandle handle{};
    uint64_t base = 0;   // where cuIpcOpenMemHandle mapped the block
    uint64_t bytes = 0;  // the block's size
  };

  ImportedIpcPlanes(std::shared_ptr<const CudaDriver> driver, const CacheGeometry& geometry)
      : driver_(std::move(driver)), geometry_(geometry) {}
  // The block opened in `rank`'s context, opening it on first use; refused
  // when it is not memory of the rank's device.
  Result<Opened> Open(uint32_t rank, const IpcMemHandle& handle);
  void CloseAll();

  std::shared_ptr<const CudaDriver> driver_;
  CacheGeometry geometry_;
  std::vector<int> ordinals_;
  std::vector<std::unique_ptr<PrimaryContext>> contexts_;  // [rank]
  std::vector<Opened> opened_;                             // blocks open now
  bool imported_ = false;
  mutable Mutex mu_;
  std::shared_ptr<const PlaneBases> bases_ GUARDED_BY(mu_);
};

}  // namespace strata
