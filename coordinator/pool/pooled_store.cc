#include "coordinator/pool/pooled_store.h"

#include <spdlog/spdlog.h>

#include <array>

#include "coordinator/pool/pool_record_image.h"
#include "coordinator/pool/pool_traffic.h"
#include "coordinator/pool/put_rules.h"
#include "coordinator/pool/source_choice.h"

namespace strata::pool {

namespace {

// A SourceCandidate naming only what ChooseSource reads: the chain's keys.
SourceCandidate Candidate(SourceTier tier, const std::vector<PrefixKey>& chain) {
  SourceCandidate c{.tier = tier, .hit = {}};
  for (const PrefixKey& k : chain) {
    ChainLink link;
    link.key = k;
    c.hit.chain.push_back(link);
  }
  return c;
}

SourceTier TierOf(Tier tier) {
  return tier == Tier::kMemory ? SourceTier::kHostDram : SourceTier::kHostNvme;
}

}  // namespace

PooledStore::PooledStore(HostStore& local, RecordIntake& intake, std::unique_ptr<PoolLink> link)
    : local_(local), intake_(intake), link_(std::move(link)) {}

bool PooledStore::ConnectionLost(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kIoError ||
         s.code() == StatusCode::kCorruption || s.code() == StatusCode::kAborted;
}

std::optional<HostHit> PooledStore::Lookup(const PrefixHistory& history, uint64_t resident_tokens,
                                           uint64_t before) {
  std::optional<HostHit> local = local_.Lookup(history, resident_tokens, before);
  PoolClient* client = link_->client();
  if (client == nullptr) return local;
  ++stats_.lookups;
  Result<std::optional<std::vector<PrefixKey>>> pooled =
      client->Lookup(history.tokens(), resident_tokens, before);
  if (!pooled.ok()) {
    ++stats_.lookup_failures;
    if (ConnectionLost(pooled.status())) link_->Lost(pooled.status());
    return local;
  }
  if (!pooled->has_value()) return local;
  const std::vector<PrefixKey>& chain = **pooled;
  std::array<SourceCandidate, 2> candidates{
      Candidate(SourceTier::kPool, chain),
      local ? Candidate(TierOf(local->tier), local->chain) : SourceCandidate{}};
  const std::optional<size_t> chosen = ChooseSource(candidates);
  if (!chosen || candidates[*chosen].tier != SourceTier::kPool) return local;
  if (Status s = ClaimAndImport(chain); !s.ok()) {
    ++stats_.claim_failures;
    spdlog::debug("prefix cache pool: restoring {} from the pool failed: {}",
                  chain.back().ToFileStem(), s.ToString());
    // FallbackAfterPoolFailure: the local hit is the local source (same
    // endpoint or shorter); none means recompute.
    return local_.Lookup(history, resident_tokens, before);
  }
  ++stats_.claims;
  return local_.Lookup(history, resident_tokens, before);
}

Status PooledStore::ClaimAndImport(const std::vector<PrefixKey>& chain) {
  PoolClient* client = link_->client();
  if (client == nullptr) return Status::Unavailable("no pool connection");
  // ClaimCopy checks each record against the manager's checksum and releases
  // the claim whatever happens.
  Result<std::vector<std::vector<std::byte>>> claimed = client->ClaimCopy(chain);
  if (!claimed.ok()) {
    if (ConnectionLost(claimed.status()) && claimed.status().code() != StatusCode::kCorruption) {
      link_->Lost(claimed.status());
    }
    return claimed.status();
  }
  if (claimed->size() != chain.size()) {
    return Status::Corruption("the pool claimed " + std::to_string(claimed->size()) +
                              " records of a chain of " + std::to_string(chain.size()));
  }
  for (size_t i = 0; i < chain.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(RecordView view, DecodeRecordImage((*claimed)[i]));
    if (view.key != chain[i]) {
      return Status::Corruption("pooled record " + chain[i].ToFileStem() + " holds the image of " +
                                view.key.ToFileStem());
    }
    Status s = intake_.Import(view, now_ms_);
    if (!s.ok() && s.code() != StatusCode::kAlreadyExists) return s;
    ++stats_.claimed_records;
    stats_.claimed_bytes += (*claimed)[i].size();
  }
  return Status::Ok();
}

void PooledStore::Poll(uint64_t now_ms, std::vector<StoreEvent>& events) {
  now_ms_ = std::max(now_ms_, now_ms);
  local_.Poll(now_ms, events);
}

Status PooledStore::PutOne(PoolClient& client, const RecordView& record) {
  const std::vector<std::byte> image = EncodeRecordImage(record);
  Status s = client.Put(record.key, record.parent, record.bucket, image, PutKind::kCascade);
  if (s.ok()) {
    ++stats_.puts;
    stats_.put_bytes += image.size();
  }
  return s;
}

void PooledStore::OnEvicted(std::span<const RecordView> chain) {
  // put_rules: the last local tier's LRU chose chain.back(); it goes to the
  // manager, and whatever the manager answers the tier then discards it.
  const PutDecision at_end = DecidePut(PutEvent::kEndOfChainEvict, 0);
  PoolClient* client = link_->client();
  Status s = client == nullptr ? Status::Unavailable("no pool connection") : Status::Ok();
  for (const RecordView& record : chain) {
    if (!s.ok() && s.code() != StatusCode::kAlreadyExists) break;
    s = PutOne(*client, record);
  }
  // Already pooled (put before, or by another instance) is as good as accepted.
  const bool pooled = s.ok() || s.code() == StatusCode::kAlreadyExists;
  const PutEvent event = pooled              ? PutEvent::kAccepted
                         : ConnectionLost(s) ? PutEvent::kManagerLost
                                             : PutEvent::kRefused;
  if (DecidePut(event, 0).action == PutAction::kReleaseSource) return;
  if (client != nullptr) ++stats_.put_refusals[ReasonLabel(s)];
  if (event == PutEvent::kManagerLost) link_->Lost(s);
  if (at_end.action == PutAction::kDiscard) ++stats_.dropped_end_of_chain;
}

PoolInstanceStats PooledStore::pool_stats() const {
  PoolInstanceStats s = stats_;
  s.reconnects = link_->reconnects();
  s.attached = link_->sharing();
  return s;
}

}  // namespace strata::pool
