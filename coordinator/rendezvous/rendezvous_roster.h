// RendezvousRoster: rank zero's decisions during a rendezvous, with no
// sockets, threads or clocks: which hello is admitted, which one fails the
// rendezvous and why, who is still missing. Both rendezvous implementations
// (in-process and TCP) drive it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/rendezvous/rendezvous.h"

namespace strata {

class RendezvousRoster {
 public:
  // `world_size` is rank zero's; ranks 1 .. world_size-1 must join.
  explicit RendezvousRoster(uint32_t world_size);

  // A peer at `address` says it is `rank` of `world_size`. OK: admitted with
  // `nonce`. An error refuses this hello (its message is for that peer and
  // rank zero's log): a world size different from rank zero's, rank 0, a rank
  // out of range, or a rank already admitted (the first admitted hello
  // wins). The roster is unchanged on error; whether the rendezvous goes on
  // is the caller's choice (the TCP server keeps waiting).
  Status Admit(RankId rank, uint32_t world_size, const std::string& address, const Nonce& nonce);

  // The admitted peer's connection ended before the rendezvous completed;
  // the rank may join again. No-op for a rank not admitted.
  void Withdraw(RankId rank);

  bool complete() const;
  uint32_t world_size() const { return world_size_; }
  // Ranks 1 .. world_size-1 not admitted, ascending.
  std::vector<RankId> Missing() const;
  // "ranks 2, 3 of 4 did not join (joined: 1)".
  std::string MissingSummary() const;
  // The admitted entry for `rank`, or null.
  const RendezvousPeer* Find(RankId rank) const;
  // Requires complete().
  PeerTable Table() const;

 private:
  uint32_t world_size_;
  std::vector<std::optional<RendezvousPeer>> peers_;  // index = rank; [0] unused
};

}  // namespace strata
