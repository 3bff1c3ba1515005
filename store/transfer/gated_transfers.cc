#include "store/transfer/gated_transfers.h"

namespace strata {

GatedTransfers::GatedTransfers(std::unique_ptr<Transfers> inner) : inner_(std::move(inner)) {}

namespace {

Status NotAttached() {
  return Status::Unavailable(
      "no runtime's planes are attached to this rank: the copy was not issued");
}

}  // namespace

Status GatedTransfers::Submit(TransferJob job) {
  // Held across the inner Submit (which never blocks), so a Shut either
  // precedes the check or sees the job counted.
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_) return NotAttached();
  STRATA_RETURN_IF_ERROR(inner_->Submit(std::move(job)));
  ++in_flight_;
  return Status::Ok();
}

Status GatedTransfers::Enter() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_) return NotAttached();
  ++in_flight_;
  return Status::Ok();
}

void GatedTransfers::Leave() {
  std::lock_guard<std::mutex> lock(mu_);
  --in_flight_;
}

void GatedTransfers::Poll(std::vector<TransferCompletion>& out) {
  const size_t before = out.size();
  inner_->Poll(out);
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_ -= out.size() - before;
}

bool GatedTransfers::WaitForCompletion(std::chrono::milliseconds timeout) {
  return inner_->WaitForCompletion(timeout);
}

void GatedTransfers::NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) {
  inner_->NotifyOnCompletion(std::move(signal));
}

Status GatedTransfers::Close(std::chrono::milliseconds deadline) { return inner_->Close(deadline); }

void GatedTransfers::Open() {
  std::lock_guard<std::mutex> lock(mu_);
  open_ = true;
}

void GatedTransfers::Shut() {
  std::lock_guard<std::mutex> lock(mu_);
  open_ = false;
}

size_t GatedTransfers::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

}  // namespace strata
