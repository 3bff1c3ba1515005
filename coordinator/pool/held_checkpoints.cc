#include "coordinator/pool/held_checkpoints.h"

#include <algorithm>

namespace strata::pool {

void HeldCheckpoints::Hold(const Holding& holding) {
  if (auto it = by_key_.find(holding.key); it != by_key_.end()) {
    order_.erase(it->second);
    by_key_.erase(it);
  }
  while (by_key_.size() >= max_holdings_ && !order_.empty()) {
    Drop(order_.begin());
  }
  order_.push_back(holding);
  by_key_[holding.key] = std::prev(order_.end());
  fresh_.push_back(holding);
}

void HeldCheckpoints::Retire(const PrefixKey& key, uint64_t generation) {
  auto it = by_key_.find(key);
  if (it == by_key_.end() || it->second->generation > generation) return;
  Drop(it->second);
}

void HeldCheckpoints::Drop(std::list<Holding>::iterator holding) {
  const PrefixKey key = holding->key;
  // Not announced yet, it never is: the manager applies withdrawals before
  // holdings, so announcing both would leave it held.
  std::erase_if(fresh_, [&](const Holding& h) { return h.key == key; });
  withdrawn_.push_back(*holding);
  by_key_.erase(key);
  order_.erase(holding);
}

void HeldCheckpoints::AnnounceAll() {
  reset_ = true;
  withdrawn_.clear();
  fresh_.assign(order_.begin(), order_.end());
}

std::optional<PoolAnnounce> HeldCheckpoints::TakeAnnounce(const ExportRecordSizes& sizes) {
  if (!pending()) return std::nullopt;
  PoolAnnounce a{.request_id = 0, .reset = reset_, .held = {}, .withdrawn = {}, .sizes = sizes};
  reset_ = false;
  // Withdrawals first in the manager's order (pool_catalog.h): a key retired
  // and held again within one announcement ends up held.
  const auto take = [](std::vector<Holding>& from, std::vector<Holding>& to) {
    const size_t n = std::min(from.size(), kPoolHoldingsPerAnnounceMax);
    to.assign(from.begin(), from.begin() + static_cast<std::ptrdiff_t>(n));
    from.erase(from.begin(), from.begin() + static_cast<std::ptrdiff_t>(n));
  };
  take(withdrawn_, a.withdrawn);
  take(fresh_, a.held);
  return a;
}

}  // namespace strata::pool
