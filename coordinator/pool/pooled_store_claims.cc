// PooledStore's claims (pooled_store.h): a pooled hit's Fetch sends the
// claim; Poll lands it on answers that have arrived, and never waits.
#include <spdlog/spdlog.h>

#include <string>
#include <variant>

#include "coordinator/pool/claim_rules.h"
#include "coordinator/pool/pool_record_image.h"
#include "coordinator/pool/pooled_store.h"

namespace strata::pool {

Status PooledStore::BeginClaim(const HostHit& hit, const InboundTicket& ticket) {
  const std::string what = "pool claim of " + hit.endpoint.ToFileStem();
  PoolClient* client = link_->client();
  if (client == nullptr) {
    ++stats_.claim_failures;
    return Status::Unavailable(what + ": no pool connection");
  }
  Result<uint64_t> sent = client->SendClaim(hit.chain);
  if (!sent.ok()) {
    ++stats_.claim_failures;
    if (ConnectionLost(sent.status())) LoseLink(sent.status());
    return sent.status().WithContext(what);
  }
  // claim_rules: 12 s plus the transfer allowance for this claim's bytes
  // and those of the claims still ahead of it.
  uint64_t ahead = 0;
  for (const PendingClaim& c : claims_) ahead += c.given_up ? 0 : c.hit.bytes;
  claims_.push_back(PendingClaim{
      .connection = link_->connection(),
      .request = *sent,
      .hit = hit,
      .ticket = ticket,
      .deadline_ms = link_->NowUs() / 1'000 + RequesterClaimBudgetMs(hit.bytes, ahead)});
  return Status::Ok();
}

void PooledStore::AdvanceClaims(std::vector<StoreEvent>& events) {
  const uint64_t now_ms = link_->NowUs() / 1'000;
  for (auto it = claims_.begin(); it != claims_.end();) {
    PendingClaim& c = *it;
    PoolClient* client = link_->connected();
    if (client == nullptr || c.connection != link_->connection()) {
      // The session that would have granted it ended, and with it its holds.
      if (!c.given_up) FailClaim(c, Status::Unavailable("the pool connection was lost"), events);
      it = claims_.erase(it);
      continue;
    }
    std::optional<PoolMessage> answer = client->TakeAnswer(c.request);
    if (!answer) {
      if (!c.given_up && now_ms > c.deadline_ms) {
        // The destination is the runtime's again: nothing was copied into it.
        FailClaim(c, Status::Aborted("no pool claim grant within its deadline"), events);
        c.given_up = true;
      }
      ++it;
      continue;
    }
    const auto* grant = std::get_if<PoolClaimAnswer>(&*answer);
    Status landed = grant == nullptr ? Status::Corruption(
                                           "the pool answered a claim with "
                                           "another message")
                    : !grant->status.ok() ? grant->status
                                          : LandClaim(*client, c, *grant);
    if (!landed.ok() && !c.given_up) FailClaim(c, landed, events);
    it = claims_.erase(it);
  }
}

Status PooledStore::LandClaim(PoolClient& client, PendingClaim& c, const PoolClaimAnswer& grant) {
  Status copied =
      grant.records.size() == c.hit.chain.size()
          ? Status::Ok()
          : Status::Corruption("the pool granted " + std::to_string(grant.records.size()) +
                               " records of a chain of " + std::to_string(c.hit.chain.size()));
  if (!c.given_up) {
    claimed_.resize(grant.records.size());
    for (size_t i = 0; i < grant.records.size() && copied.ok(); ++i) {
      copied = grant.records[i].key == c.hit.chain[i]
                   ? client.CopyClaimed(grant.records[i], claimed_[i])
                   : Status::Corruption("the pool granted " + grant.records[i].key.ToFileStem() +
                                        " for " + c.hit.chain[i].ToFileStem());
    }
  }
  // Every copy from the slots has ended: only now may the manager reuse
  // them. Its answer is not awaited (nothing depends on it).
  if (Result<uint64_t> release = client.SendRelease(grant.claim); release.ok()) {
    client.ForgetAnswer(*release);
  } else {
    LoseLink(release.status());  // the session's end releases it; the copies stand
  }
  if (c.given_up) return Status::Ok();
  STRATA_RETURN_IF_ERROR(copied);
  for (size_t i = 0; i < c.hit.chain.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(RecordView view, DecodeRecordImage(claimed_[i]));
    if (view.key != c.hit.chain[i]) {
      return Status::Corruption("pooled record " + c.hit.chain[i].ToFileStem() +
                                " holds the image of " + view.key.ToFileStem());
    }
    Status s = tiers_.intake->Import(view, now_ms_);
    if (!s.ok() && s.code() != StatusCode::kAlreadyExists) return s;
    ++stats_.claimed_records;
    stats_.claimed_bytes += claimed_[i].size();
  }
  STRATA_RETURN_IF_ERROR(tiers_.landing->Fetch(c.hit, c.ticket));
  ++stats_.claims;
  return Status::Ok();
}

void PooledStore::FailClaim(PendingClaim& c, const Status& why, std::vector<StoreEvent>& events) {
  ++stats_.claim_failures;
  spdlog::debug("prefix cache pool: restoring {} from the pool failed: {}",
                c.hit.endpoint.ToFileStem(), why.ToString());
  // FallbackAfterPoolFailure: a local copy of the same endpoint (one that
  // landed for another request, or that a local tier holds by now).
  for (HostStore* tier : {tiers_.landing, tiers_.local}) {
    if (tier != nullptr && tier->Fetch(c.hit, c.ticket).ok()) {
      ++stats_.claim_fallbacks;
      return;
    }
    if (tiers_.landing == tiers_.local) break;
  }
  events.push_back(
      StoreEvent{.kind = StoreEvent::Kind::kFetchFailed,
                 .ticket = c.ticket.ticket,
                 .key = c.hit.endpoint,
                 .status = why.WithContext("pool claim of " + c.hit.endpoint.ToFileStem())});
}

}  // namespace strata::pool
