// The attach Hello check: does a runtime's declared identity and geometry
// match what this rank serves? Pure: no sockets, no clocks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attach/client/attach_messages.h"
#include "attach/client/unique_fd.h"
#include "store/record/fingerprint.h"
#include "store/record/geometry.h"
#include "store/transfer/plane_importer.h"

namespace strata::attach {

// What the rank was configured with.
struct AttachExpectation {
  std::string model_identity;
  StateMode state_mode = StateMode::kOrdinary;
  CacheGeometry geometry;
  // How its planes may be shared (default memfd only).
  std::vector<PlaneHandleKind> plane_handles{PlaneHandleKind::kMemfd};
};

// Ok, or kInvalidArgument whose message names the first difference, in this
// order: protocol version, model identity, state mode, page tokens, rank
// count, then per rank its allocations (RankGeometryFromAllocations' checks),
// row plane, page planes (names and unit bytes, by name), page and row
// counts; then how the planes are shared; finally the number of fds (or of
// IPC handles, kCudaIpc, which travels no fd) against the allocations.
Status CheckHello(const AttachHello& hello, size_t fd_count, const AttachExpectation& expected);

// Which plane each of the Hello's fds (or IPC handles) backs. Requires
// CheckHello to pass.
std::vector<PlaneFd> PlaneFdsOf(const AttachHello& hello, std::span<const UniqueFd> fds,
                                const CacheGeometry& geometry);

}  // namespace strata::attach
