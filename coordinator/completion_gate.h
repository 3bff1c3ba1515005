// CompletionGate: which peer answers can let a job of rank zero's
// ShardedTransport complete, so that its owner is woken once per job (when
// the last awaited JobDone arrives) instead of once per JobDone. Pure logic:
// no threads, sockets or clock reads. ShardedTransport calls Wakes() from
// its inbox's wake filter (wire/link/link_inbox.h) under its own lock.
//
// The contract that keeps it safe: it only ever withholds a wake-up for a
// JobDone of an expected (job, rank) whose job still awaits another peer's
// JobDone, and for a heartbeat (which changes nothing). That message stays
// queued and is taken with the wake-up of the last awaited answer, which
// queues after it. Anything else wakes: an unknown job, a rank the job was
// not sent to (or a second answer), a rank the link does not belong to,
// every other message. The owner must Expect() a job before it sends it to
// any peer, and Settle() an answer it records itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "store/base/ids.h"
#include "wire/link/link_inbox.h"

namespace strata {

class CompletionGate {
 public:
  // `rank_by_tag`: each peer link's inbox tag and its rank.
  explicit CompletionGate(std::map<uint64_t, RankId> rank_by_tag)
      : rank_by_tag_(std::move(rank_by_tag)) {}

  // Job `id` is about to be sent to `peers` (rank zero, if listed, is left
  // out: its completion wakes the owner by its own signal).
  void Expect(JobId id, const std::vector<RankId>& peers);
  // The owner recorded `rank`'s outcome of `id` itself (its send was
  // refused). True when that leaves no peer answer of `id` awaited: the owner
  // must then poll its inbox before it sleeps (answers may be queued there
  // unannounced).
  [[nodiscard]] bool Settle(JobId id, RankId rank);
  // Forgets every job (the transport stopped): from now on every JobDone
  // wakes.
  void Clear() { awaited_.clear(); }
  // Whether `event`, just queued by its link, must wake the owner now.
  [[nodiscard]] bool Wakes(const wire::LinkEvent& event);

  // Jobs with peer answers still awaited.
  size_t jobs() const { return awaited_.size(); }

 private:
  std::map<uint64_t, RankId> rank_by_tag_;
  std::unordered_map<JobId, std::vector<RankId>> awaited_;  // never empty vectors
};

}  // namespace strata
