#include "coordinator/pool/hash_pipeline.h"

namespace strata::pool {

HashPipeline::HashPipeline() : thread_([this] { Loop(); }) {}

HashPipeline::~HashPipeline() {
  {
    MutexLock lock(mu_);
    Drain(lock);
    stopping_ = true;
  }
  work_.NotifyAll();
  thread_.join();
}

void HashPipeline::Drain(MutexLock& lock) {
  while (!pieces_.empty() || hashing_) idle_.Wait(lock);
}

void HashPipeline::Reset() {
  MutexLock lock(mu_);
  Drain(lock);
  hash_.Reset();
}

void HashPipeline::Update(std::span<const std::byte> piece) {
  if (piece.empty()) return;
  {
    MutexLock lock(mu_);
    pieces_.push_back(piece);
  }
  work_.NotifyOne();
}

uint64_t HashPipeline::Digest() {
  MutexLock lock(mu_);
  Drain(lock);
  return hash_.Digest();
}

void HashPipeline::Loop() {
  MutexLock lock(mu_);
  while (true) {
    while (pieces_.empty() && !stopping_) work_.Wait(lock);
    if (pieces_.empty()) return;  // stopping, and drained
    const std::span<const std::byte> piece = pieces_.front();
    pieces_.pop_front();
    hashing_ = true;
    lock.Unlock();
    hash_.Update(piece);
    lock.Lock();
    hashing_ = false;
    if (pieces_.empty()) idle_.NotifyAll();
  }
}

}  // namespace strata::pool
