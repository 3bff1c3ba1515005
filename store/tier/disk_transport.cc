#include "store/tier/disk_transport.h"

namespace strata {

Status DiskTransport::SubmitHost(const RecordJob& job, const HostBuffers& /*buffers*/) {
  return Status::FailedPrecondition("this disk transport cannot move " + job.key.ToFileStem() +
                                    " through host buffers");
}

}  // namespace strata
