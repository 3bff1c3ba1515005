// InProcessRendezvous: both sides of a rendezvous inside one process, for
// tests and for an embedding runtime whose ranks are threads. Same rules as
// the TCP rendezvous (RendezvousRoster decides); addresses are fixed strings.
#pragma once

#include <list>
#include <optional>
#include <string>

#include "coordinator/rendezvous/rendezvous.h"
#include "coordinator/rendezvous/rendezvous_roster.h"
#include "store/base/mutex.h"

namespace strata {

// Thread-safe: one thread calls AwaitPeers, any number call Join.
class InProcessRendezvous final : public RendezvousServer, public RendezvousClient {
 public:
  // `record_host` goes into every ticket; `peer_address` is what rank zero
  // records as every peer's address.
  explicit InProcessRendezvous(NonceSource nonces, std::string record_host = "127.0.0.1",
                               std::string peer_address = "127.0.0.1");

  Result<PeerTable> AwaitPeers(uint32_t world_size, uint16_t record_port,
                               RendezvousDeadline deadline) override;
  Result<JoinTicket> Join(RankId rank, uint32_t world_size, RendezvousDeadline deadline) override;

 private:
  // One Join call waiting; lives on the joining thread's stack, listed in
  // attempts_ until it has an outcome or gives up.
  struct Attempt {
    RankId rank;
    uint32_t world_size = 0;
    bool admitted = false;
    std::optional<Result<JoinTicket>> outcome;
  };
  enum class Phase : unsigned char { kWaitingForRankZero, kRunning, kFinished };

  // Admits every attempt not yet admitted; the first refusal fails everyone.
  Status AdmitPending() REQUIRES(mu_);
  // Gives every listed attempt `outcome` and unlists it.
  void ResolveAll(const Status& failure) REQUIRES(mu_);

  NonceSource nonces_;
  const std::string record_host_;
  const std::string peer_address_;
  Mutex mu_;
  CondVar changed_;
  Phase phase_ GUARDED_BY(mu_) = Phase::kWaitingForRankZero;
  std::optional<RendezvousRoster> roster_ GUARDED_BY(mu_);  // set while kRunning
  std::list<Attempt*> attempts_ GUARDED_BY(mu_);
};

}  // namespace strata
