// PlaneImporter: planes that a runtime in another process shares with this
// rank (attach/, docs/embedding.md). The rank reserves their addresses at
// startup, so the transfers built over them outlive every runtime; Import
// maps one runtime's shared memory at those addresses and Release unmaps it.
// Two forms: memfd host memory (attach/imported_planes.h) and CUDA VMM
// allocations exported as file descriptors (cuda/imported_device_planes.h).
//
// Contract: Release only after every copy into or out of the planes has
// finished (the attach session drains first). Thread: the owner's.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "store/base/status.h"
#include "store/record/geometry.h"

namespace strata {

// How a runtime shares each allocation's memory: the fd it passes is a
// memfd, or a CUDA VMM allocation exported as a POSIX file descriptor.
enum class PlaneHandleKind : uint8_t { kMemfd, kCudaVmmFd };

inline std::string_view PlaneHandleKindName(PlaneHandleKind k) {
  return k == PlaneHandleKind::kMemfd ? "memfd host memory"
                                      : "CUDA VMM allocations (POSIX file descriptors)";
}

// Which plane of which rank an fd backs, in the Hello's order.
struct PlaneFd {
  uint32_t rank = 0;
  std::optional<uint32_t> page_plane;  // nullopt: the row plane
  int fd = -1;
};

class PlaneImporter {
 public:
  virtual ~PlaneImporter() = default;
  // The geometry whose planes are shared (this rank's, or every rank's of
  // one process).
  virtual const CacheGeometry& shared_geometry() const = 0;
  // What the runtime must pass.
  virtual PlaneHandleKind handle_kind() const = 0;
  // Maps every plane from `fds` (one per plane of every rank). Each must hold
  // at least the plane's bytes. On error nothing stays mapped.
  virtual Status Import(std::span<const PlaneFd> fds) = 0;
  // Unmaps the runtime's memory, leaving the reservations.
  virtual void Release() = 0;
  virtual bool imported() const = 0;
};

}  // namespace strata
