#include "store/tier/direct_transport_split.h"

namespace strata {

SplitDiskTransport::SplitDiskTransport(std::unique_ptr<DirectTransport> direct,
                                       std::unique_ptr<StagedTransport> staged,
                                       std::vector<std::shared_ptr<void>> keep_alive)
    : keep_alive_(std::move(keep_alive)), direct_(std::move(direct)), staged_(std::move(staged)) {
  direct_->NotifyOnCompletion(signal_);
  staged_->NotifyOnCompletion(signal_);
}

SplitDiskTransport::~SplitDiskTransport() {
  // The direct side's worker uses the seams kept alive here: stop it first.
  direct_.reset();
  staged_.reset();
}

void SplitDiskTransport::Poll(std::vector<RecordJobDone>& out) {
  for (RecordJobDone& d : ready_) out.push_back(std::move(d));
  ready_.clear();
  direct_->Poll(out);
  staged_->Poll(out);
}

bool SplitDiskTransport::WaitForCompletion(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    direct_->Poll(ready_);
    staged_->Poll(ready_);
    if (!ready_.empty()) return true;
    if (!signal_->WaitUntil(deadline)) {
      direct_->Poll(ready_);
      staged_->Poll(ready_);
      return !ready_.empty();
    }
  }
}

void SplitDiskTransport::NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) {
  signal_ = signal != nullptr ? std::move(signal) : std::make_shared<WakeSignal>();
  direct_->NotifyOnCompletion(signal_);
  staged_->NotifyOnCompletion(signal_);
  if (!ready_.empty()) signal_->Notify();
}

Status SplitDiskTransport::stopped() const {
  Status s = direct_->stopped();
  return s.ok() ? staged_->stopped() : s;
}

Status SplitDiskTransport::Close(std::chrono::milliseconds deadline) {
  Status direct = direct_->Close(deadline);
  Status staged = staged_->Close(deadline);
  return direct.ok() ? staged : direct;
}

}  // namespace strata
