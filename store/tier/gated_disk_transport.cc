#include "store/tier/gated_disk_transport.h"

namespace strata {

GatedDiskTransport::GatedDiskTransport(std::unique_ptr<DiskTransport> inner, GatedTransfers& gate)
    : inner_(std::move(inner)), gate_(gate) {}

Status GatedDiskTransport::Submit(RecordJob job) {
  const bool touches_planes =
      job.kind == RecordJobKind::kStore || job.kind == RecordJobKind::kFetch;
  if (!touches_planes) return inner_->Submit(std::move(job));
  // Entered before the inner Submit, so a Shut either refuses the job or
  // sees it counted.
  STRATA_RETURN_IF_ERROR(gate_.Enter());
  const uint64_t id = job.id.value;
  if (Status s = inner_->Submit(std::move(job)); !s.ok()) {
    gate_.Leave();
    return s;
  }
  entered_.insert(id);
  return Status::Ok();
}

void GatedDiskTransport::Poll(std::vector<RecordJobDone>& out) {
  const size_t before = out.size();
  inner_->Poll(out);
  for (size_t i = before; i < out.size(); ++i) {
    if (entered_.erase(out[i].id.value) > 0) gate_.Leave();
  }
}

}  // namespace strata
