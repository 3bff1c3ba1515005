#include "store/tier/disk_transport.h"

#include <string>

namespace strata {

Status DiskTransport::SubmitHost(const RecordJob& job, const HostBuffers& /*buffers*/) {
  return Status::FailedPrecondition("this disk transport cannot move " + job.key.ToFileStem() +
                                    " through host buffers");
}

Status DiskTransport::SubmitShares(const RecordJob& job, std::span<const HostBuffers> shares) {
  if (shares.size() != share_count()) {
    return Status::InvalidArgument("host job of " + job.key.ToFileStem() + " has " +
                                   std::to_string(shares.size()) + " shares for " +
                                   std::to_string(share_count()) + " rank(s)");
  }
  return SubmitHost(job, shares[0]);
}

}  // namespace strata
