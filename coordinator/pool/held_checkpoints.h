// HeldCheckpoints: what an instance tells its manager it holds (seed 2.15,
// "Exports"; docs/pool.md): every checkpoint its runtime published, until
// the runtime's eviction notice retires it. The manager may then ask for an
// export of any of them. Pure: PooledStore feeds it and sends what
// TakeAnnounce returns.
//
// The book is bounded (kHoldingsPerSessionMax): past it the oldest holding
// is withdrawn. A new session, or the runtime's lost notices
// (EvictionsLost), announce the whole book again after a reset; a holding
// retired whose notice was lost stays announced until an export of it is
// refused (the manager then forgets it).
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "coordinator/pool/pool_messages.h"

namespace strata::pool {

class HeldCheckpoints {
 public:
  explicit HeldCheckpoints(size_t max_holdings = kHoldingsPerSessionMax)
      : max_holdings_(max_holdings) {}

  // The runtime published `holding` (a key held again takes the new generation).
  void Hold(const Holding& holding);
  // The runtime retired `key` at `generation` (an older generation's notice
  // leaves a newer holding be).
  void Retire(const PrefixKey& key, uint64_t generation);
  // The whole book goes out again, after a reset: a new session, or lost notices.
  void AnnounceAll();
  // The changes not yet announced, as one announcement (at most
  // kPoolHoldingsPerAnnounceMax of each list: call again for the rest);
  // nullopt when there are none.
  std::optional<PoolAnnounce> TakeAnnounce(const ExportRecordSizes& sizes);

  size_t size() const { return by_key_.size(); }
  bool pending() const { return reset_ || !fresh_.empty() || !withdrawn_.empty(); }

 private:
  // Forgets `holding` and withdraws it.
  void Drop(std::list<Holding>::iterator holding);

  size_t max_holdings_;
  std::list<Holding> order_;  // oldest first
  std::unordered_map<PrefixKey, std::list<Holding>::iterator> by_key_;
  bool reset_ = false;
  std::vector<Holding> fresh_;      // held, not yet announced
  std::vector<Holding> withdrawn_;  // retired, not yet announced
};

}  // namespace strata::pool
