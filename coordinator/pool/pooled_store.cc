#include "coordinator/pool/pooled_store.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "coordinator/pool/pool_record_image.h"
#include "coordinator/pool/pool_traffic.h"
#include "coordinator/pool/put_rules.h"

namespace strata::pool {

PooledStore::PooledStore(PooledTiers tiers, std::unique_ptr<PoolLink> link)
    : tiers_(std::move(tiers)),
      link_(std::move(link)),
      puts_(tiers_.put_queue_bytes),
      exports_(tiers_.record_sizes),
      tickets_(link_->lookup_grace_us()) {
  STRATA_ASSERT(tiers_.landing != nullptr && tiers_.intake != nullptr,
                "a pooled store needs a landing tier for claims");
}

bool PooledStore::ConnectionLost(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kIoError ||
         s.code() == StatusCode::kCorruption || s.code() == StatusCode::kAborted;
}

StoreOutcome PooledStore::Store(const PublishedCheckpoint& checkpoint) {
  // The runtime holds what it publishes until its eviction notice says not.
  if (tiers_.export_copier != nullptr) {
    held_.Hold(Holding{.key = checkpoint.key,
                       .generation = checkpoint.generation,
                       .bucket_digest = checkpoint.bucket});
  }
  if (tiers_.local != nullptr) return tiers_.local->Store(checkpoint);
  if (tiers_.publish_from == nullptr || !link_->sharing()) return StoreOutcome::kDisabled;
  const StoreOutcome outcome = tiers_.landing->Store(checkpoint);
  if (outcome == StoreOutcome::kQueued) {
    publishing_[checkpoint.checkpoint_id] = checkpoint.key;
    publishing_keys_.insert(checkpoint.key);
  }
  return outcome;
}

void PooledStore::PublishStored(const std::vector<StoreEvent>& events, size_t first) {
  for (size_t i = first; i < events.size() && !publishing_.empty(); ++i) {
    const StoreEvent& e = events[i];
    if (e.kind != StoreEvent::Kind::kStored && e.kind != StoreEvent::Kind::kStoreFailed) continue;
    auto it = publishing_.find(e.checkpoint_id);
    if (it == publishing_.end()) continue;
    const PrefixKey key = it->second;
    publishing_.erase(it);
    publishing_keys_.erase(key);
    if (e.kind == StoreEvent::Kind::kStored) PublishHeld(key);
    // Children stored meanwhile go after it (or, if it failed, on their own
    // and are refused for want of it).
    auto waiting = waiting_publish_.find(key);
    if (waiting == waiting_publish_.end()) continue;
    const std::vector<PrefixKey> children = std::move(waiting->second);
    waiting_publish_.erase(waiting);
    for (const PrefixKey& child : children) PublishHeld(child);
  }
}

void PooledStore::DrainPublishing(std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!publishing_.empty() && std::chrono::steady_clock::now() < deadline) {
    const size_t first = closing_events_.size();
    tiers_.landing->Poll(now_ms_, closing_events_);
    PublishStored(closing_events_, first);
    if (!publishing_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void PooledStore::PublishHeld(const PrefixKey& key) {
  // Enough to keep the keys of every record a long session publishes
  // between two clears; after one, ancestors are parked once more.
  constexpr size_t kPublishedKeysMax = size_t{1} << 16;
  constexpr size_t kPublishedAncestorsMax = 64;
  std::vector<RecordView> chain = tiers_.publish_from->HeldChain(key, kPublishedAncestorsMax);
  if (chain.empty()) return;  // the landing tier's LRU took it already
  if (const std::optional<PrefixKey>& up = chain.front().parent;
      up && publishing_keys_.count(*up) != 0) {
    waiting_publish_[*up].push_back(key);  // its parent's copy-out is under way
    return;
  }
  if (published_.size() >= kPublishedKeysMax) published_.clear();
  // An ancestor parked before is not parked again; the record itself is.
  std::erase_if(
      chain, [&](const RecordView& r) { return !published_.insert(r.key).second && r.key != key; });
  ++stats_.published;
  puts_.Park(ParkedImages(chain));
  AdvancePuts(link_->connected());
}

Status PooledStore::Fetch(const HostHit& hit, const InboundTicket& ticket) {
  if (pool_hits_.erase(hit.endpoint) != 0) return BeginClaim(hit, ticket);
  if (own_landing() && landing_hits_.erase(hit.endpoint) != 0) {
    return tiers_.landing->Fetch(hit, ticket);
  }
  if (tiers_.local == nullptr) {
    return Status::NotFound("no local tier holds " + hit.endpoint.ToFileStem());
  }
  return tiers_.local->Fetch(hit, ticket);
}

int PooledStore::PollFd() const {
  const PoolClient* client = link_->connected();
  return client != nullptr ? client->fd() : -1;
}

void PooledStore::NotifyOnProgress(std::shared_ptr<WakeSignal> signal) {
  copier_.NotifyOnProgress(signal);
  if (tiers_.export_copier != nullptr) tiers_.export_copier->NotifyOnCompletion(signal);
  if (own_landing()) tiers_.landing->NotifyOnProgress(signal);
  if (tiers_.local != nullptr) tiers_.local->NotifyOnProgress(std::move(signal));
}

namespace {

void AddTier(TierStats& to, const TierStats& from) {
  to.records += from.records;
  to.bytes += from.bytes;
  to.stored_total += from.stored_total;
  to.evicted_total += from.evicted_total;
  to.compacted_total += from.compacted_total;
  to.expired_total += from.expired_total;
  to.dropped_io_total += from.dropped_io_total;
  to.packed_total += from.packed_total;
  to.per_rank_total += from.per_rank_total;
  to.abandoned_total += from.abandoned_total;
  to.bytes_in_total += from.bytes_in_total;
  to.bytes_out_total += from.bytes_out_total;
}

}  // namespace

StoreStats PooledStore::Stats() const {
  if (tiers_.local == nullptr) return tiers_.landing->Stats();
  StoreStats s = tiers_.local->Stats();
  if (!own_landing()) return s;
  // One lookup per request: the landing tier's lookups are not added.
  const StoreStats l = tiers_.landing->Stats();
  s.slots_in_use += l.slots_in_use;
  s.slots_total += l.slots_total;
  s.hits += l.hits;
  s.reused_tokens += l.reused_tokens;
  s.fetches += l.fetches;
  s.fetch_failed += l.fetch_failed;
  AddTier(s.memory, l.memory);
  return s;
}

Status PooledStore::Close() {
  if (!publishing_.empty()) {
    DrainPublishing(kPutFlushBound);
    if (!publishing_.empty()) {
      spdlog::warn(
          "prefix cache pool: {} stored checkpoints were still being copied at close "
          "and were not put to the manager",
          publishing_.size());
    }
  }
  if (!FlushPuts(kPutFlushBound)) {
    spdlog::warn("prefix cache pool: {} evicted records did not reach the manager before close",
                 puts_.stats().parked_records);
  }
  // Claims not landed: the manager releases their holds when the session
  // ends; their destinations are never written, and each ticket still
  // waiting ends with kFetchFailed (the next Poll's). A copy still in
  // flight reads the arena through its own mapping and is dropped when it
  // returns.
  const auto fail = [this](const InboundTicket& ticket, const PrefixKey& endpoint) {
    ++stats_.claim_failures;
    closing_events_.push_back(
        StoreEvent{.kind = StoreEvent::Kind::kFetchFailed,
                   .ticket = ticket.ticket,
                   .key = endpoint,
                   .status = Status::Aborted("the store closed before the pool claim of " +
                                             endpoint.ToFileStem() + " landed")});
  };
  for (const PendingClaim& c : claims_) {
    if (!c.given_up) fail(c.ticket, c.hit.endpoint);  // a given-up one reported its failure
  }
  for (const LandingClaim& l : landings_) fail(l.ticket, l.hit.endpoint);
  claims_.clear();
  landings_.clear();  // their records land as local copies, or not at all
  // Exports: no copy may read the planes once the store closed.
  Status s = DrainExports(kPutFlushBound);
  if (Status t = tiers_.local != nullptr ? tiers_.local->Close() : Status::Ok(); s.ok()) s = t;
  if (own_landing()) {
    Status l = tiers_.landing->Close();
    if (s.ok()) s = l;
  }
  return s;
}

void PooledStore::Poll(uint64_t now_ms, std::vector<StoreEvent>& events) {
  now_ms_ = std::max(now_ms_, now_ms);
  if (!closing_events_.empty()) {
    events.insert(events.end(), closing_events_.begin(), closing_events_.end());
    closing_events_.clear();
  }
  PumpTickets();
  AdvanceClaims(events);
  AdvancePuts(link_->connected());
  if (tiers_.local != nullptr) tiers_.local->Poll(now_ms, events);
  if (own_landing()) {
    const size_t first = events.size();
    tiers_.landing->Poll(now_ms, events);
    if (!publishing_.empty()) PublishStored(events, first);
  }
  if (!landings_.empty()) AdvanceLandings(events);
  AdvanceExports();
  exports_.TakeEvents(events);
}

void PooledStore::AdvancePuts(PoolClient* client) {
  if (puts_.empty()) return;
  if (!link_->sharing()) {
    puts_.AbandonAll("unshared");  // for good: nothing parked will reach a manager
    return;
  }
  if (client == nullptr) return;
  Status s = client->Pump();
  if (s.ok()) s = puts_.Advance(*client, now_ms_);
  if (!s.ok()) LoseLink(s);
}

void PooledStore::OnEvicted(std::span<const RecordView> chain) {
  // put_rules: the last local tier's LRU chose chain.back(); the tier
  // discards its copy, so the parked image is the source kept until the
  // manager accepts. An instance that does not share drops it (end of chain).
  if (!link_->sharing()) {
    ++dropped_unshared_;
    AdvancePuts(nullptr);
    return;
  }
  puts_.Park(ParkedImages(chain));
  AdvancePuts(link_->client());
}

bool PooledStore::TakesDemotions() const {
  return link_->sharing() && link_->connected() != nullptr && puts_.empty();
}

std::vector<ParkedRecord> PooledStore::ParkedImages(std::span<const RecordView> chain) {
  std::vector<ParkedRecord> parked;
  parked.reserve(chain.size());
  for (const RecordView& r : chain) {
    parked.push_back(ParkedRecord{.key = r.key,
                                  .parent = r.parent,
                                  .bucket_digest = r.bucket,
                                  .image = EncodeRecordImage(r)});
  }
  return parked;
}

void PooledStore::OnDemoted(std::span<const RecordView> chain) {
  puts_.Park(ParkedImages(chain), /*copy=*/true);
  AdvancePuts(link_->connected());
}

void PooledStore::TakeDemotionOutcomes(std::vector<PrefixKey>& accepted,
                                       std::vector<PrefixKey>& given_up) {
  puts_.TakeCopyOutcomes(accepted, given_up);
}

bool PooledStore::FlushPuts(std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!puts_.empty()) {
    AdvancePuts(link_->client());
    PoolClient* client = link_->connected();
    const std::optional<uint64_t> awaited = puts_.awaited();
    // Nothing out: the rest wait for a gate (or a connection), not for us.
    if (client == nullptr || !awaited) break;
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    if (Status s = client->WaitAnswer(*awaited, left); !s.ok()) LoseLink(s);
  }
  return puts_.empty();
}

PoolInstanceStats PooledStore::pool_stats() const {
  PoolInstanceStats s = stats_;
  s.reconnects = link_->reconnects();
  s.attached = link_->sharing();
  s.end_of_chain_tier = tiers_.end_of_chain_tier;
  for (const PendingClaim& c : claims_) ++(c.given_up ? s.claims_failed_held : s.claims_in_flight);
  s.claims_in_flight += landings_.size();
  const PutQueueStats& q = puts_.stats();
  s.puts = q.accepted;
  s.put_bytes = q.accepted_bytes;
  s.put_refusals = q.refusals;
  s.put_retries = q.retries;
  s.put_probes = q.probes;
  s.parked_records = q.parked_records;
  s.parked_bytes = q.parked_bytes;
  s.put_abandoned = q.abandoned;
  s.demotions_given_up = q.copies_given_up;
  s.dropped_end_of_chain = dropped_unshared_ + puts_.abandoned_total();
  s.exports = exports_.counts();
  s.holdings = held_.size();
  return s;
}

}  // namespace strata::pool
