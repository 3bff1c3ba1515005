// DevicePlanes: a rank set's page planes and state rows as the runtime owns
// them — GPU memory (cuda/) or ordinary host buffers (HostPlanes). Transfers
// address them through planes(rank); a runtime or test writes and reads
// individual pages and rows through the accessors (for GPU memory these copy
// through the driver, so they are for tests and the synthetic runtime, not
// the byte path).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "store/base/ids.h"
#include "store/base/status.h"
#include "store/record/geometry.h"
#include "store/transfer/copy_engine.h"

namespace strata {

class DevicePlanes {
 public:
  virtual ~DevicePlanes() = default;
  virtual const CacheGeometry& geometry() const = 0;
  virtual RankPlanes planes(uint32_t rank) const = 0;
  // `bytes` is exactly the plane's (row's) unit bytes.
  virtual Status WritePage(uint32_t rank, uint32_t plane, PageId page,
                           std::span<const uint8_t> bytes) = 0;
  virtual Status ReadPage(uint32_t rank, uint32_t plane, PageId page, std::span<uint8_t> bytes) = 0;
  virtual Status WriteRow(uint32_t rank, StateSlot slot, std::span<const uint8_t> bytes) = 0;
  virtual Status ReadRow(uint32_t rank, StateSlot slot, std::span<uint8_t> bytes) = 0;
};

// Checks one DevicePlanes access against `geometry`: `rank`, `plane` (a page
// access; nullopt for a row), the page id or slot `index` in range, and
// `bytes` exactly the unit. InvalidArgument naming what is wrong.
Status CheckPlaneAccess(const CacheGeometry& geometry, uint32_t rank, std::optional<uint32_t> plane,
                        uint64_t index, uint64_t bytes);

}  // namespace strata
