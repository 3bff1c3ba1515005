#include "store/tier/gated_disk_transport.h"

namespace strata {

GatedDiskTransport::GatedDiskTransport(std::unique_ptr<DiskTransport> inner, GatedTransfers& gate)
    : inner_(std::move(inner)), gate_(gate) {}

Status GatedDiskTransport::Submit(RecordJob job) {
  const bool touches_planes =
      job.kind == RecordJobKind::kStore || job.kind == RecordJobKind::kFetch;
  if (!touches_planes) return inner_->Submit(std::move(job));
  const uint64_t id = job.id.value;
  if (entered_.count(id) != 0) {
    return Status::InvalidArgument("record job " + std::to_string(id) + " is already in flight");
  }
  // Entered before the inner Submit, so a Shut either refuses the job or
  // sees it counted.
  STRATA_RETURN_IF_ERROR(gate_.Enter());
  if (Status s = inner_->Submit(std::move(job)); !s.ok()) {
    gate_.Leave();
    return s;
  }
  entered_.insert(id);
  return Status::Ok();
}

void GatedDiskTransport::Settle(std::vector<RecordJobDone>& done, size_t from) {
  for (size_t i = from; i < done.size(); ++i) {
    if (entered_.erase(done[i].id.value) > 0) gate_.Leave();
  }
}

void GatedDiskTransport::Poll(std::vector<RecordJobDone>& out) {
  for (RecordJobDone& d : kept_) out.push_back(std::move(d));
  kept_.clear();
  const size_t before = out.size();
  inner_->Poll(out);
  Settle(out, before);
}

Status GatedDiskTransport::Close(std::chrono::milliseconds deadline) {
  Status s = inner_->Close(deadline);
  const size_t before = kept_.size();
  inner_->Poll(kept_);
  Settle(kept_, before);
  return s;
}

}  // namespace strata
