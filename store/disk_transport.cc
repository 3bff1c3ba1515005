#include "store/disk_transport.h"

namespace strata {

std::string_view RecordJobKindName(RecordJobKind kind) {
  switch (kind) {
    case RecordJobKind::kStore: return "store";
    case RecordJobKind::kFetch: return "fetch";
    case RecordJobKind::kTruncate: return "truncate";
    case RecordJobKind::kUnlink: return "unlink";
  }
  return "unknown";
}

Status DiskTransport::SubmitHost(const RecordJob& job, const HostBuffers& /*buffers*/) {
  return Status::FailedPrecondition("this disk transport cannot move " + job.key.ToFileStem() +
                                    " through host buffers");
}

}  // namespace strata
