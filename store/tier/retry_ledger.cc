#include "store/tier/retry_ledger.h"

namespace strata {

std::string_view RetryCauseName(RetryCause cause) {
  switch (cause) {
    case RetryCause::kInflight: return "inflight";
    case RetryCause::kSlabs: return "slabs";
    case RetryCause::kQueue: return "queue";
    case RetryCause::kBudget: return "budget";
  }
  return "unknown";
}

StoreOutcome RetryLedger::Offered(const PrefixKey& key, StoreOutcome outcome, RetryCause cause) {
  auto it = by_key_.find(key);
  if (it != by_key_.end()) {
    order_.erase(it->second);
    by_key_.erase(it);
  }
  if (outcome != StoreOutcome::kDeferred && outcome != StoreOutcome::kRetry) return outcome;
  if (capacity_ == 0) return outcome;
  if (by_key_.size() >= capacity_) {
    by_key_.erase(order_.front().key);
    order_.pop_front();
  }
  order_.push_back(Entry{key, cause});
  by_key_.emplace(key, std::prev(order_.end()));
  return outcome;
}

void RetryLedger::Evicted(std::span<const EvictionNotice> notices, RetryCounts& abandoned) {
  for (const EvictionNotice& n : notices) {
    auto it = by_key_.find(n.key);
    if (it == by_key_.end()) continue;
    ++abandoned[static_cast<size_t>(it->second->cause)];
    order_.erase(it->second);
    by_key_.erase(it);
  }
}

}  // namespace strata
