// PooledStore: an instance's local tiers joined to its pool manager (seed
// 2.15, on the manager's host). A HostStore that answers from the local store
// and, when the pool holds a longer prefix (ChooseSource), claims the pooled
// chain, checks every record (the manager's checksum, then the image), imports
// it as local records through RecordIntake and answers with the local tier's
// ordinary hit, so the normal Fetch restores it. Any failure answers with the
// local hit (or none: recompute). As the local tier's EvictionSink it puts
// every record evicted from the end of the local chain (kind `cascade`); the
// tier keeps the source until the put returns and drops it whatever the
// answer (put_rules: end-of-chain eviction discards).
//
// Not built: tickets begun on arrival (the lookup is synchronous, bounded by
// the lookup grace), demotion before the tier fills, retries of refused puts,
// disk tiers as the chain's end, claims straight into the planes.
//
// Thread: the owner's (model worker) thread. Lookups and evictions talk to
// the manager synchronously, each within its bound.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "coordinator/pool/pool_link.h"
#include "store/tier/host_store.h"
#include "store/tier/record_handover.h"

namespace strata::pool {

// Counters of the instance's pool traffic (metrics `strata_pool_*`).
struct PoolInstanceStats {
  uint64_t lookups = 0;          // manager lookups asked
  uint64_t lookup_failures = 0;  // lookups that got no answer in the grace
  uint64_t claims = 0;           // chains claimed and imported
  uint64_t claim_failures = 0;   // claims that fell back to local or recompute
  uint64_t claimed_records = 0;
  uint64_t claimed_bytes = 0;
  uint64_t puts = 0;  // records the manager accepted (evicted ones and their ancestors)
  uint64_t put_bytes = 0;
  std::map<std::string, uint64_t> put_refusals;  // by status code name
  uint64_t dropped_end_of_chain = 0;             // evicted records the manager did not take
  uint64_t reconnects = 0;
  bool attached = false;
};

class PooledStore final : public HostStore, public EvictionSink {
 public:
  // `local` and `intake` (the same tier, e.g. a MemoryStore) outlive this
  // store; the caller makes this store the tier's eviction sink.
  PooledStore(HostStore& local, RecordIntake& intake, std::unique_ptr<PoolLink> link);

  std::optional<HostHit> Lookup(const PrefixHistory& history, uint64_t resident_tokens,
                                uint64_t before) override;
  StoreOutcome Store(const PublishedCheckpoint& checkpoint) override {
    return local_.Store(checkpoint);
  }
  Status Fetch(const HostHit& hit, const InboundTicket& ticket) override {
    return local_.Fetch(hit, ticket);
  }
  void Poll(uint64_t now_ms, std::vector<StoreEvent>& events) override;
  void NotifyOnProgress(std::shared_ptr<WakeSignal> signal) override {
    local_.NotifyOnProgress(std::move(signal));
  }
  StoreStats Stats() const override { return local_.Stats(); }
  Status Close() override { return local_.Close(); }

  // Puts the chain's held ancestors (root first; one the manager holds
  // already answers kAlreadyExists without bytes), then the evicted record.
  void OnEvicted(std::span<const RecordView> chain) override;

  PoolInstanceStats pool_stats() const;
  const PoolLink& link() const { return *link_; }

 private:
  // Claims `chain` and imports it; an error leaves the local tier as it was
  // apart from records already imported (they are whole and checked).
  Status ClaimAndImport(const std::vector<PrefixKey>& chain);
  // Puts one record; what the manager answered (kAlreadyExists: held).
  Status PutOne(PoolClient& client, const RecordView& record);
  // Whether `s` from the client means the connection is gone (vs a refusal).
  static bool ConnectionLost(const Status& s);

  HostStore& local_;
  RecordIntake& intake_;
  std::unique_ptr<PoolLink> link_;
  uint64_t now_ms_ = 0;
  PoolInstanceStats stats_;
};

}  // namespace strata::pool
