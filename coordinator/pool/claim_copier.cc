#include "coordinator/pool/claim_copier.h"

namespace strata::pool {

void RunClaimCopy(ClaimCopyJob& job, HashPipeline& hash) {
  if (job.records.size() != job.chain.size()) {
    job.status = Status::Corruption("the pool granted " + std::to_string(job.records.size()) +
                                    " records of a chain of " + std::to_string(job.chain.size()));
    return;
  }
  job.buffers.resize(job.records.size());
  for (size_t i = 0; i < job.records.size(); ++i) {
    const ClaimedRecord& r = job.records[i];
    if (r.key != job.chain[i]) {
      job.status = Status::Corruption("the pool granted " + r.key.ToFileStem() + " for " +
                                      job.chain[i].ToFileStem());
      return;
    }
    job.status = job.slots->CopyOut(job.claim, static_cast<uint32_t>(i), r, job.buffers[i], hash);
    if (!job.status.ok()) return;
  }
}

ClaimCopier::ClaimCopier() : thread_([this] { Loop(); }) {}

ClaimCopier::~ClaimCopier() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  work_.NotifyAll();
  thread_.join();
}

void ClaimCopier::NotifyOnProgress(std::shared_ptr<WakeSignal> signal) {
  MutexLock lock(mu_);
  signal_ = std::move(signal);
}

void ClaimCopier::Submit(ClaimCopyJob job) {
  {
    MutexLock lock(mu_);
    queued_.push_back(std::move(job));
  }
  work_.NotifyAll();
}

std::vector<ClaimCopyJob> ClaimCopier::TakeDone() {
  MutexLock lock(mu_);
  std::vector<ClaimCopyJob> out;
  out.swap(done_);
  return out;
}

size_t ClaimCopier::pending() const {
  MutexLock lock(mu_);
  return queued_.size() + in_hand_ + done_.size();
}

void ClaimCopier::SetHeld(bool held) {
  {
    MutexLock lock(mu_);
    held_ = held;
  }
  work_.NotifyAll();
}

void ClaimCopier::Loop() {
  while (true) {
    ClaimCopyJob job;
    {
      MutexLock lock(mu_);
      while ((queued_.empty() || held_) && !stopping_) work_.Wait(lock);
      if (stopping_) return;
      job = std::move(queued_.front());
      queued_.pop_front();
      in_hand_ = 1;
    }
    RunClaimCopy(job, hash_);
    std::shared_ptr<WakeSignal> signal;
    {
      MutexLock lock(mu_);
      done_.push_back(std::move(job));
      in_hand_ = 0;
      signal = signal_;
    }
    if (signal) signal->Notify();
  }
}

}  // namespace strata::pool
