// InProcessRendezvous: both sides of a rendezvous inside one process, for
// tests and for an embedding runtime whose ranks are threads. Same rules as
// the TCP rendezvous (RendezvousRoster decides); addresses are fixed strings.
#pragma once

#include <condition_variable>
#include <list>
#include <mutex>
#include <optional>
#include <string>

#include "coordinator/rendezvous/rendezvous.h"
#include "coordinator/rendezvous/rendezvous_roster.h"

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
  Status AdmitPending();
  // Gives every listed attempt `outcome` and unlists it.
  void ResolveAll(const Status& failure);

  NonceSource nonces_;
  const std::string record_host_;
  const std::string peer_address_;
  std::mutex mu_;
  std::condition_variable changed_;
  Phase phase_ = Phase::kWaitingForRankZero;  // guarded by mu_
  std::optional<RendezvousRoster> roster_;    // guarded by mu_; set while kRunning
  std::list<Attempt*> attempts_;              // guarded by mu_
};

}  // namespace strata
