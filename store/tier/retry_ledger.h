// Why offers of GPU checkpoints were refused, kept until they settle
// (seed 2.15, "Retention metrics": host_cache_retry_abandoned_total{reason}).
//
// A store that refuses an offer for now (kDeferred, kRetry) expects the
// runtime to offer it again after progress. The ledger keeps the cause of
// the last such refusal per key until the key settles (a later offer of it
// is queued, present, oversize or refused for good). When the runtime
// reports that it evicted a key still waiting for a re-offer, the copy can
// never happen: the ledger hands back the last cause, to be counted as an
// abandoned retry. Bounded: past kRetryLedgerKeys the oldest refusal is
// forgotten (and is then not counted). Pure: no I/O, threads or clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>

#include "store/base/prefix_key.h"
#include "store/tier/export_hooks.h"
#include "store/tier/host_store.h"

namespace strata {

// "inflight", "slabs", "queue", "budget": the metric's reason label.
std::string_view RetryCauseName(RetryCause cause);

inline constexpr size_t kRetryLedgerKeys = 4096;

class RetryLedger {
 public:
  explicit RetryLedger(size_t capacity = kRetryLedgerKeys) : capacity_(capacity) {}

  // Notes the outcome of an offer of `key`: kDeferred and kRetry keep `cause`
  // as the key's last refusal; any other outcome settles the key. Returns
  // `outcome`.
  StoreOutcome Offered(const PrefixKey& key, StoreOutcome outcome, RetryCause cause);
  // An offer of `key` made by `offer(RetryCause& cause)`, which sets `cause`
  // when it refuses for now, noted as Offered does.
  template <typename Offer>
  StoreOutcome Note(const PrefixKey& key, Offer offer) {
    RetryCause cause = RetryCause::kQueue;
    const StoreOutcome outcome = offer(cause);
    return Offered(key, outcome, cause);
  }

  // The runtime evicted `notices`' checkpoints: each key still waiting for a
  // re-offer is counted in `abandoned` under its last cause and forgotten.
  void Evicted(std::span<const EvictionNotice> notices, RetryCounts& abandoned);

  size_t waiting() const { return by_key_.size(); }

 private:
  struct Entry {
    PrefixKey key;
    RetryCause cause;
  };
  size_t capacity_;
  std::list<Entry> order_;  // oldest refusal first
  std::unordered_map<PrefixKey, std::list<Entry>::iterator> by_key_;
};

}  // namespace strata
