#include "coordinator/pool/arena_copier.h"

#include "coordinator/pool/slot_copies.h"
#include "store/record/checksum.h"

namespace strata::pool {

void RunClaimCopy(ClaimCopyJob& job) {
  if (job.records.size() != job.chain.size()) {
    job.status = Status::Corruption("the pool granted " + std::to_string(job.records.size()) +
                                    " records of a chain of " + std::to_string(job.chain.size()));
    return;
  }
  job.buffers.resize(job.records.size());
  Xxh3Stream hash;
  for (size_t i = 0; i < job.records.size(); ++i) {
    const ClaimedRecord& r = job.records[i];
    if (r.key != job.chain[i]) {
      job.status = Status::Corruption("the pool granted " + r.key.ToFileStem() + " for " +
                                      job.chain[i].ToFileStem());
      return;
    }
    job.status = CopyOutOfSlots(*job.arena, r, job.buffers[i], hash);
    if (!job.status.ok()) return;
  }
}

void RunPutCopy(PutCopyJob& job) {
  Xxh3Stream hash;
  job.checksum = CopyIntoSlots(*job.arena, job.slots, *job.image, hash);
}

ArenaCopier::ArenaCopier() : thread_([this] { Loop(); }) {}

ArenaCopier::~ArenaCopier() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  work_.NotifyAll();
  thread_.join();
}

void ArenaCopier::NotifyOnProgress(std::shared_ptr<WakeSignal> signal) {
  MutexLock lock(mu_);
  signal_ = std::move(signal);
}

void ArenaCopier::Enqueue(Job job) {
  {
    MutexLock lock(mu_);
    queued_.push_back(std::move(job));
  }
  work_.NotifyAll();
}

void ArenaCopier::Submit(ClaimCopyJob job) { Enqueue(std::move(job)); }
void ArenaCopier::SubmitPut(PutCopyJob job) { Enqueue(std::move(job)); }

std::vector<ClaimCopyJob> ArenaCopier::TakeDone() {
  MutexLock lock(mu_);
  std::vector<ClaimCopyJob> out;
  out.swap(claims_done_);
  return out;
}

std::vector<PutCopyJob> ArenaCopier::TakePutsDone() {
  MutexLock lock(mu_);
  std::vector<PutCopyJob> out;
  out.swap(puts_done_);
  return out;
}

size_t ArenaCopier::pending() const {
  MutexLock lock(mu_);
  return queued_.size() + in_hand_ + claims_done_.size() + puts_done_.size();
}

bool ArenaCopier::WaitIdle(std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  MutexLock lock(mu_);
  while (!queued_.empty() || in_hand_ != 0) {
    if (!idle_.WaitUntil(lock, deadline)) break;
  }
  return queued_.empty() && in_hand_ == 0;
}

void ArenaCopier::SetHeld(bool held) {
  {
    MutexLock lock(mu_);
    held_ = held;
  }
  work_.NotifyAll();
}

void ArenaCopier::Loop() {
  while (true) {
    Job job;
    {
      MutexLock lock(mu_);
      while ((queued_.empty() || held_) && !stopping_) work_.Wait(lock);
      if (stopping_) return;
      job = std::move(queued_.front());
      queued_.pop_front();
      in_hand_ = 1;
    }
    if (auto* claim = std::get_if<ClaimCopyJob>(&job)) RunClaimCopy(*claim);
    if (auto* put = std::get_if<PutCopyJob>(&job)) RunPutCopy(*put);
    std::shared_ptr<WakeSignal> signal;
    {
      MutexLock lock(mu_);
      if (auto* claim = std::get_if<ClaimCopyJob>(&job)) claims_done_.push_back(std::move(*claim));
      if (auto* put = std::get_if<PutCopyJob>(&job)) puts_done_.push_back(std::move(*put));
      in_hand_ = 0;
      signal = signal_;
    }
    idle_.NotifyAll();
    if (signal) signal->Notify();
  }
}

}  // namespace strata::pool
