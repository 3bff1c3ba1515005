#include "coordinator/rendezvous/in_process_rendezvous.h"

#include <utility>

namespace strata {

InProcessRendezvous::InProcessRendezvous(NonceSource nonces, std::string record_host,
                                         std::string peer_address)
    : nonces_(std::move(nonces)),
      record_host_(std::move(record_host)),
      peer_address_(std::move(peer_address)) {}

Status InProcessRendezvous::AdmitPending() {
  for (Attempt* a : attempts_) {
    if (a->admitted) continue;
    STRATA_ASSIGN_OR_RETURN(Nonce nonce, nonces_());
    STRATA_RETURN_IF_ERROR(roster_->Admit(a->rank, a->world_size, peer_address_, nonce));
    a->admitted = true;
  }
  return Status::Ok();
}

void InProcessRendezvous::ResolveAll(const Status& failure) {
  for (Attempt* a : attempts_) a->outcome = Result<JoinTicket>(failure);
  attempts_.clear();
}

Result<PeerTable> InProcessRendezvous::AwaitPeers(uint32_t world_size, uint16_t record_port,
                                                  RendezvousDeadline deadline) {
  MutexLock lock(mu_);
  if (phase_ != Phase::kWaitingForRankZero) {
    return Status::FailedPrecondition("AwaitPeers called twice on one rendezvous");
  }
  phase_ = Phase::kRunning;
  roster_.emplace(world_size);
  while (true) {
    Status admitted = AdmitPending();
    if (!admitted.ok()) {
      ResolveAll(admitted);
      phase_ = Phase::kFinished;
      changed_.NotifyAll();
      return admitted;
    }
    if (roster_->complete()) break;
    if (!changed_.WaitUntil(lock, deadline)) {
      // Joins that arrived with the deadline still count.
      if (AdmitPending().ok() && roster_->complete()) break;
      Status late = Status::Unavailable("rendezvous deadline passed: " + roster_->MissingSummary());
      ResolveAll(late);
      phase_ = Phase::kFinished;
      changed_.NotifyAll();
      return late;
    }
  }
  for (Attempt* a : attempts_) {
    const RendezvousPeer* peer = roster_->Find(a->rank);
    a->outcome = JoinTicket{world_size, record_host_, record_port, peer->nonce};
  }
  attempts_.clear();
  phase_ = Phase::kFinished;
  changed_.NotifyAll();
  return roster_->Table();
}

Result<JoinTicket> InProcessRendezvous::Join(RankId rank, uint32_t world_size,
                                             RendezvousDeadline deadline) {
  MutexLock lock(mu_);
  if (phase_ == Phase::kFinished) {
    return Status::FailedPrecondition("rank " + std::to_string(rank.value) +
                                      ": rank zero's rendezvous has already finished");
  }
  Attempt attempt{rank, world_size, false, std::nullopt};
  attempts_.push_back(&attempt);
  changed_.NotifyAll();
  while (!attempt.outcome.has_value() && changed_.WaitUntil(lock, deadline)) {
  }
  if (!attempt.outcome.has_value()) {
    attempts_.remove(&attempt);
    if (attempt.admitted && roster_.has_value()) roster_->Withdraw(rank);
    return Status::Unavailable("rank " + std::to_string(rank.value) +
                               ": rank zero did not complete the rendezvous by the deadline (" +
                               (phase_ == Phase::kWaitingForRankZero
                                    ? std::string("rank zero never started it")
                                    : roster_->MissingSummary()) +
                               ")");
  }
  return std::move(*attempt.outcome);
}

}  // namespace strata
