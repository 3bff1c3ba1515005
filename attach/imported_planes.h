// ImportedPlanes: the "device" planes of a runtime in another process, shared
// as memfd host memory. At construction it reserves one address range per
// page plane and row plane of `geometry` (no access, no memory); Import maps
// an attached runtime's fds over those ranges (MAP_SHARED | MAP_FIXED), and
// Release puts the empty reservation back. The addresses never change, so the
// store's Transfers are built once over them and outlive every runtime.
//
// Contract: Release only after every copy into or out of the planes has
// finished (the attach session drains first); a copy issued while released
// would fault. Thread: Import/Release on the store's owner thread.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "attach/client/unique_fd.h"
#include "store/transfer/host_planes.h"
#include "store/transfer/plane_importer.h"

namespace strata::attach {

class ImportedPlanes final : public HostAddressPlanes, public PlaneImporter {
 public:
  static Result<std::unique_ptr<ImportedPlanes>> Reserve(const CacheGeometry& geometry);
  ~ImportedPlanes() override;
  ImportedPlanes(const ImportedPlanes&) = delete;
  ImportedPlanes& operator=(const ImportedPlanes&) = delete;

  // PlaneImporter (memfds).
  const CacheGeometry& shared_geometry() const override { return geometry(); }
  std::vector<PlaneHandleKind> handle_kinds() const override { return {PlaneHandleKind::kMemfd}; }
  Status Import(std::span<const PlaneFd> fds) override;
  void Release() override;
  bool imported() const override { return imported_; }

 private:
  struct Range {
    uint8_t* base = nullptr;
    size_t bytes = 0;  // rounded up to whole pages
  };

  explicit ImportedPlanes(const CacheGeometry& geometry) : HostAddressPlanes(geometry) {}
  Status CheckAccessible() const override;
  Range& RangeOf(const PlaneFd& fd);

  std::vector<std::vector<Range>> page_ranges_;  // [rank][plane]
  std::vector<Range> row_ranges_;                // [rank]
  bool imported_ = false;
};

}  // namespace strata::attach
