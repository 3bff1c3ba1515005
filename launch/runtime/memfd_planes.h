// MemfdPlanes: one rank's page planes and state row in memfd host memory,
// owned by a runtime process and shared with its `strata rank` through the
// attach channel (AttachClient's SharedAllocation), while the runtime
// writes and reads them directly (HostAddressPlanes). The synthetic
// runtime's planes when `strata runtime` runs without a GPU.
#pragma once

#include <memory>
#include <vector>

#include "attach/client/attach_client.h"
#include "attach/client/memfd_region.h"
#include "store/transfer/host_planes.h"

namespace strata {

class MemfdPlanes final : public HostAddressPlanes {
 public:
  // `rank` of a one-rank geometry: its page planes (geometry order), then its row.
  static Result<std::unique_ptr<MemfdPlanes>> Create(const RankGeometry& rank,
                                                     uint32_t page_tokens);

  // The allocations to attach with, in the order above; the fds stay owned here.
  std::vector<std::vector<attach::SharedAllocation>> Shared() const;

 private:
  explicit MemfdPlanes(const CacheGeometry& geometry) : HostAddressPlanes(geometry) {}

  std::vector<attach::SharedAllocation> shared_;
  std::vector<std::unique_ptr<attach::MemfdRegion>> regions_;
};

}  // namespace strata
