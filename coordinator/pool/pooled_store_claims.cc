// PooledStore's claims (pooled_store.h): a pooled hit's Fetch sends the
// claim; Poll lands it on answers that have arrived, and never waits.
#include <spdlog/spdlog.h>

#include <algorithm>
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
  // and those of the claims still ahead of it. A claim moves its skipped
  // pages too (the GPU-held records down to one the landing tier holds).
  uint64_t ahead = 0;
  for (const PendingClaim& c : claims_) ahead += c.given_up ? 0 : ClaimedBytes(c.hit);
  claims_.push_back(PendingClaim{
      .connection = link_->connection(),
      .request = *sent,
      .hit = hit,
      .ticket = ticket,
      .deadline_ms = link_->NowUs() / 1'000 + RequesterClaimBudgetMs(ClaimedBytes(hit), ahead)});
  return Status::Ok();
}

uint64_t PooledStore::ClaimedBytes(const HostHit& hit) const {
  return (hit.skip_pages + hit.pages) * tiers_.record_sizes.page_record_bytes +
         tiers_.record_sizes.row_segment_bytes;
}

void PooledStore::AdvanceClaims(std::vector<StoreEvent>& events) {
  for (ClaimCopyJob& job : copier_.TakeDone()) FinishClaimCopy(job, events);
  const uint64_t now_ms = link_->NowUs() / 1'000;
  for (auto it = claims_.begin(); it != claims_.end();) {
    PendingClaim& c = *it;
    PoolClient* client = link_->connected();
    const bool lost = client == nullptr || c.connection != link_->connection();
    if (c.copy_job != 0) {
      // Its copy is in flight into buffers of the store's own, never into
      // the destination: a lost session or a passed deadline fails the fetch
      // at once, and the copy is dropped when it comes back.
      if (!c.given_up && (lost || now_ms > c.deadline_ms)) {
        FailClaim(c.hit, c.ticket,
                  lost
                      ? Status::Unavailable("the pool connection was lost")
                      : Status::Aborted("the pool claim's copy did not finish within its deadline"),
                  events);
        c.given_up = true;
      }
      ++it;
      continue;
    }
    if (lost) {
      // The session that would have granted it ended, and with it its holds.
      if (!c.given_up)
        FailClaim(c.hit, c.ticket, Status::Unavailable("the pool connection was lost"), events);
      it = claims_.erase(it);
      continue;
    }
    std::optional<PoolMessage> answer = client->TakeAnswer(c.request);
    if (!answer) {
      if (!c.given_up && now_ms > c.deadline_ms) {
        // The destination is the runtime's again: nothing was copied into it.
        FailClaim(c.hit, c.ticket, Status::Aborted("no pool claim grant within its deadline"),
                  events);
        c.given_up = true;
      }
      ++it;
      continue;
    }
    const auto* grant = std::get_if<PoolClaimAnswer>(&*answer);
    if (grant != nullptr && grant->status.ok() && !c.given_up) {
      StartClaimCopy(*client, c, *grant);
      ++it;
      continue;
    }
    if (grant != nullptr && grant->status.ok()) {
      c.granted = grant->claim;
      ReleaseClaim(c);  // given up before its grant: nothing to copy
    } else if (!c.given_up) {
      FailClaim(c.hit, c.ticket,
                grant == nullptr
                    ? Status::Corruption("the pool answered a claim with another message")
                    : grant->status,
                events);
    }
    it = claims_.erase(it);
  }
}

void PooledStore::StartClaimCopy(PoolClient& client, PendingClaim& c,
                                 const PoolClaimAnswer& grant) {
  c.granted = grant.claim;
  c.copy_job = next_copy_job_++;
  copier_.Submit(ClaimCopyJob{.id = c.copy_job,
                              .slots = client.claim_slots(),
                              .claim = grant.claim,
                              .records = grant.records,
                              .chain = c.hit.chain,
                              .buffers = std::move(spare_buffers_),
                              .status = Status::Ok()});
  spare_buffers_.clear();
}

void PooledStore::FinishClaimCopy(ClaimCopyJob& job, std::vector<StoreEvent>& events) {
  auto it = std::find_if(claims_.begin(), claims_.end(),
                         [&](const PendingClaim& c) { return c.copy_job == job.id; });
  if (it != claims_.end()) {
    // Every copy from the slots has ended: only now may the manager reuse them.
    ReleaseClaim(*it);
    if (!it->given_up) {
      Status landed = job.status.ok() ? ImportClaimed(*it, job.buffers) : job.status;
      if (!landed.ok()) FailClaim(it->hit, it->ticket, landed, events);
    }
    claims_.erase(it);
  }  // else Close dropped the claim: its session's end released it
  spare_buffers_ = std::move(job.buffers);
}

void PooledStore::ReleaseClaim(const PendingClaim& c) {
  PoolClient* client = link_->connected();
  if (client == nullptr || c.connection != link_->connection()) return;
  // Its answer is not awaited (nothing depends on it).
  if (Result<uint64_t> release = client->SendRelease(c.granted); release.ok()) {
    client->ForgetAnswer(*release);
  } else {
    LoseLink(release.status());  // the session's end releases it; the copies stand
  }
}

namespace {

// Record `i` of a claimed `chain` decoded from its checked image: its key
// must be chain[i], and past the first its parent chain[i - 1] (the image
// is the putter's; the manager indexed the record under the parent its put
// named).
Result<RecordView> ClaimedView(std::span<const PrefixKey> chain, size_t i,
                               std::span<const std::byte> image) {
  STRATA_ASSIGN_OR_RETURN(RecordView view, DecodeRecordImage(image));
  if (view.key != chain[i]) {
    return Status::Corruption("pooled record " + chain[i].ToFileStem() + " holds the image of " +
                              view.key.ToFileStem());
  }
  if (i > 0 && view.parent != chain[i - 1]) {
    return Status::Corruption("pooled record " + chain[i].ToFileStem() +
                              " names another parent than " + chain[i - 1].ToFileStem());
  }
  return view;
}

}  // namespace

Status PooledStore::ImportClaimed(const PendingClaim& c,
                                  std::vector<std::vector<std::byte>>& records) {
  if (tiers_.disk_landing != nullptr) {
    records.resize(c.hit.chain.size());
    landings_.push_back({.hit = c.hit,
                         .ticket = c.ticket,
                         .deadline_ms = c.deadline_ms,
                         .records = std::move(records),
                         .imported = 0});
    records.clear();
    return Status::Ok();
  }
  for (size_t i = 0; i < c.hit.chain.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(RecordView view, ClaimedView(c.hit.chain, i, records.at(i)));
    Status s = tiers_.intake->Import(view, now_ms_);
    if (!s.ok() && s.code() != StatusCode::kAlreadyExists) return s;
    ++stats_.claimed_records;
    stats_.claimed_bytes += records[i].size();
  }
  STRATA_RETURN_IF_ERROR(tiers_.landing->Fetch(c.hit, c.ticket));
  ++stats_.claims;
  return Status::Ok();
}

Status PooledStore::ImportLanding(LandingClaim& c) {
  for (; c.imported < c.hit.chain.size(); ++c.imported) {
    const std::vector<std::byte>& image = c.records[c.imported];
    STRATA_ASSIGN_OR_RETURN(RecordView view, ClaimedView(c.hit.chain, c.imported, image));
    Status s = tiers_.intake->Import(view, now_ms_);
    if (!s.ok() && s.code() != StatusCode::kAlreadyExists) return s;
    ++stats_.claimed_records;
    stats_.claimed_bytes += image.size();
  }
  return Status::Ok();
}

void PooledStore::AdvanceLandings(std::vector<StoreEvent>& events) {
  const uint64_t now_ms = link_->NowUs() / 1'000;
  for (auto it = landings_.begin(); it != landings_.end();) {
    const bool late = now_ms > it->deadline_ms;
    Status imported = ImportLanding(*it);
    if (!imported.ok() && (imported.code() != StatusCode::kBusy || late)) {
      FailClaim(it->hit, it->ticket, imported, events);
      it = landings_.erase(it);
      continue;
    }
    if (!imported.ok()) {  // no room yet: the tier's unlinks are still running
      ++it;
      continue;
    }
    ImportState state = ImportState::kLanded;
    for (const PrefixKey& k : it->hit.chain) {
      const ImportState s = tiers_.disk_landing->Imported(k);
      if (s == ImportState::kGone) {
        state = s;
        break;
      }
      if (s == ImportState::kWriting) state = s;
    }
    if (state == ImportState::kWriting && !late) {
      ++it;
      continue;
    }
    Status fetched =
        state == ImportState::kLanded ? tiers_.landing->Fetch(it->hit, it->ticket)
        : state == ImportState::kGone
            ? Status::Unavailable("a claimed record's write failed, or it left the disk since")
            : Status::Aborted("the claimed records were not written within the claim's deadline");
    if (fetched.ok()) {
      ++stats_.claims;
    } else {
      FailClaim(it->hit, it->ticket, fetched, events);
    }
    it = landings_.erase(it);
  }
}

void PooledStore::FailClaim(const HostHit& hit, const InboundTicket& ticket, const Status& why,
                            std::vector<StoreEvent>& events) {
  ++stats_.claim_failures;
  spdlog::debug("prefix cache pool: restoring {} from the pool failed: {}",
                hit.endpoint.ToFileStem(), why.ToString());
  // FallbackAfterPoolFailure: a local copy of the same endpoint (one that
  // landed for another request, or that a local tier holds by now).
  for (HostStore* tier : {tiers_.landing, tiers_.local}) {
    if (tier != nullptr && tier->Fetch(hit, ticket).ok()) {
      ++stats_.claim_fallbacks;
      return;
    }
    if (tiers_.landing == tiers_.local) break;
  }
  events.push_back(
      StoreEvent{.kind = StoreEvent::Kind::kFetchFailed,
                 .ticket = ticket.ticket,
                 .key = hit.endpoint,
                 .status = why.WithContext("pool claim of " + hit.endpoint.ToFileStem())});
}

}  // namespace strata::pool
