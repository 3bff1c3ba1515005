// PlaneImporter: planes that a runtime in another process shares with this
// rank (attach/, docs/embedding.md). The rank reserves their addresses at
// startup, so the transfers built over them outlive every runtime; Import
// maps one runtime's shared memory at those addresses and Release unmaps it.
// Three forms: memfd host memory (attach/imported_planes.h), CUDA VMM
// allocations exported as file descriptors (cuda/imported_device_planes.h),
// and cudaMalloc'd memory shared by legacy CUDA IPC handles
// (cuda/imported_ipc_planes.h). IPC memory opens at an address the driver
// picks, not at a reserved one: its importer is also a PlaneBaseSource
// (store/transfer/plane_bases.h) that the transfers read per job.
//
// Contract: Release only after every copy into or out of the planes has
// finished (the attach session drains first). Thread: the owner's.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "store/base/status.h"
#include "store/record/geometry.h"

namespace strata {

// How a runtime shares each allocation's memory: the fd it passes is a
// memfd, or a CUDA VMM allocation exported as a POSIX file descriptor; or no
// fd travels and each allocation is a legacy CUDA IPC handle.
enum class PlaneHandleKind : uint8_t { kMemfd, kCudaVmmFd, kCudaIpc };

inline std::string_view PlaneHandleKindName(PlaneHandleKind k) {
  switch (k) {
    case PlaneHandleKind::kMemfd: return "memfd host memory";
    case PlaneHandleKind::kCudaVmmFd: return "CUDA VMM allocations (POSIX file descriptors)";
    case PlaneHandleKind::kCudaIpc: return "cudaMalloc'd memory (legacy CUDA IPC handles)";
  }
  return "unknown";
}

// A cudaMalloc'd plane shared by legacy CUDA IPC: the cuIpcGetMemHandle
// (cudaIpcGetMemHandle) bytes of the allocation that holds it, and where in
// that allocation the plane starts (a caching allocator such as PyTorch's
// hands out pieces of larger cudaMalloc blocks; the handle always names the
// block, which opens at its base).
inline constexpr size_t kIpcMemHandleBytes = 64;
using IpcMemHandle = std::array<uint8_t, kIpcMemHandleBytes>;
struct IpcPlane {
  IpcMemHandle handle{};
  uint64_t offset = 0;  // bytes from the allocation's base to the plane's
};

// "a or b" for a refusal's message.
inline std::string PlaneHandleKindsName(const std::vector<PlaneHandleKind>& kinds) {
  std::string out;
  for (PlaneHandleKind k : kinds)
    out += (out.empty() ? "" : " or ") + std::string(PlaneHandleKindName(k));
  return out;
}

// Which plane of which rank an fd (or an IPC handle) backs, in the Hello's
// order.
struct PlaneFd {
  uint32_t rank = 0;
  std::optional<uint32_t> page_plane;  // nullopt: the row plane
  int fd = -1;                         // -1 for kCudaIpc
  std::optional<IpcPlane> ipc;         // set exactly for kCudaIpc
};

class PlaneImporter {
 public:
  virtual ~PlaneImporter() = default;
  // The geometry whose planes are shared (this rank's, or every rank's of
  // one process).
  virtual const CacheGeometry& shared_geometry() const = 0;
  // What the runtime must pass (the first is named when a Hello differs).
  virtual std::vector<PlaneHandleKind> handle_kinds() const = 0;
  // Maps every plane from `fds` (one per plane of every rank, all of one of
  // handle_kinds()). Each must hold at least the plane's bytes. On error
  // nothing stays mapped.
  virtual Status Import(std::span<const PlaneFd> fds) = 0;
  // Unmaps the runtime's memory, leaving the reservations.
  virtual void Release() = 0;
  virtual bool imported() const = 0;
};

}  // namespace strata
