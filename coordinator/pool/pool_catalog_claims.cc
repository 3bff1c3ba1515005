// PoolCatalog: lookups, claims and the catalog's checks (pool_catalog.h).
#include <string>

#include "coordinator/pool/pool_catalog.h"
#include "coordinator/pool/pool_catalog_state.h"

namespace strata::pool {

Result<std::optional<LookupHit>> PoolCatalog::Lookup(SessionId session,
                                                     const PrefixHistory& history,
                                                     uint64_t resident_consumed,
                                                     uint64_t max_consumed) const {
  STRATA_ASSIGN_OR_RETURN(const Session* s, FindSession(session));
  const ScopeState& scope = *scopes_.at(s->scope);
  return scope.index.Lookup(history, resident_consumed, max_consumed,
                            StateSet{TransferState::kReady});
}

Result<ClaimGrant> PoolCatalog::Claim(SessionId session, std::span<const PrefixKey> chain,
                                      uint64_t now_ms) {
  STRATA_ASSIGN_OR_RETURN(Session * s, FindSession(session));
  ScopeState& scope = *scopes_.at(s->scope);
  if (chain.empty()) return Status::InvalidArgument("pool claim of an empty chain");
  STRATA_RETURN_IF_ERROR(CheckClaimable(scope, chain));
  std::vector<const Record*> records;
  for (const PrefixKey& key : chain) {
    records.push_back(&records_.at(scope.index.Find(key)->location.value));
  }
  const CatalogCounts now = counts();
  const ClaimAdmission admission =
      AdmitClaim(PooledState::kReady, static_cast<uint32_t>(now.claims_in_flight),
                 limits_.claims_in_flight_max);
  if (admission != ClaimAdmission::kAdmit) {
    return Status::Busy("pool claims at their limit of " +
                        std::to_string(limits_.claims_in_flight_max));
  }
  OpenClaim claim;
  ClaimGrant grant;
  uint64_t bytes = 0;
  for (size_t i = 0; i < chain.size(); ++i) {
    // Neither can fail: every record was found above and owns its slots.
    const Status pinned = scope.index.Pin(chain[i]);
    STRATA_ASSERT(pinned.ok(), pinned.ToString());
    claim.keys.push_back(chain[i]);
    claim.locations.push_back(scope.index.Find(chain[i])->location);
    for (SlotId slot : records[i]->slots) {
      const Status held = slots_.Hold(slot);
      STRATA_ASSERT(held.ok(), held.ToString());
      claim.held.push_back(slot);
    }
    bytes += records[i]->bytes;
    grant.records.push_back(ClaimedRecord{.key = chain[i],
                                          .bytes = records[i]->bytes,
                                          .checksum = records[i]->checksum,
                                          .slots = records[i]->slots});
  }
  (void)scope.index.Touch(chain.back(), now_ms);  // found above
  scope.last_use_ms = std::max(scope.last_use_ms, now_ms);
  grant.deadline_ms =
      now_ms + ManagerClaimBudgetMs(kClaimSetupMs, limits_.claim_setup_limit_ms, bytes);
  claim.clock = ClaimClock{.deadline_ms = grant.deadline_ms, .last_progress_ms = now_ms};
  grant.claim = ClaimId(next_id_++);
  s->claims.emplace(grant.claim, std::move(claim));
  return grant;
}

Status PoolCatalog::CheckClaimable(const ScopeState& scope, std::span<const PrefixKey> chain) {
  for (const PrefixKey& key : chain) {
    const std::optional<IndexEntry> entry = scope.index.Find(key);
    const PooledState state = !entry.has_value()                      ? PooledState::kAbsent
                              : entry->state == TransferState::kReady ? PooledState::kReady
                                                                      : PooledState::kArriving;
    if (state == PooledState::kReady) continue;
    const ClaimAdmission why = AdmitClaim(state, 0, 1);
    const std::string text =
        "pool claim of " + key.ToFileStem() + ": " + std::string(ClaimAdmissionName(why));
    return why == ClaimAdmission::kNotFound ? Status::NotFound(text)
                                            : Status::FailedPrecondition(text);
  }
  return Status::Ok();
}

Status PoolCatalog::ClaimProgress(SessionId session, ClaimId claim, uint64_t now_ms) {
  STRATA_ASSIGN_OR_RETURN(Session * s, FindSession(session));
  auto it = s->claims.find(claim);
  if (it == s->claims.end()) return Status::NotFound("pool claim " + std::to_string(claim.value));
  if (it->second.failed) return Status::Aborted("pool claim " + std::to_string(claim.value));
  it->second.clock.last_progress_ms = std::max(it->second.clock.last_progress_ms, now_ms);
  return Status::Ok();
}

Status PoolCatalog::ReleaseClaim(SessionId session, ClaimId claim) {
  STRATA_ASSIGN_OR_RETURN(Session * s, FindSession(session));
  if (!s->claims.contains(claim)) {
    return Status::NotFound("pool claim " + std::to_string(claim.value));
  }
  EndClaim(*s, claim);
  ++progress_epoch_;
  return Status::Ok();
}

void PoolCatalog::EndClaim(Session& session, ClaimId id) {
  auto it = session.claims.find(id);
  ScopeState& scope = *scopes_.at(session.scope);
  UnpinClaimed(scope, it->second);
  for (SlotId slot : it->second.held) {
    Status unheld = slots_.Unhold(slot);
    STRATA_ASSERT(unheld.ok(), unheld.ToString());
  }
  session.claims.erase(it);
}

void PoolCatalog::UnpinClaimed(ScopeState& scope, const OpenClaim& claim) {
  for (size_t i = 0; i < claim.keys.size(); ++i) {
    const std::optional<IndexEntry> entry = scope.index.Find(claim.keys[i]);
    if (entry.has_value() && entry->location == claim.locations[i]) {
      (void)scope.index.Unpin(claim.keys[i]);
    }
  }
}

std::vector<FailedClaim> PoolCatalog::ExpireClaims(uint64_t now_ms) {
  std::vector<FailedClaim> failed;
  for (auto& [id, session] : sessions_) {
    ScopeState& scope = *scopes_.at(session->scope);
    for (auto& [claim_id, claim] : session->claims) {
      if (claim.failed) continue;
      const ClaimHealth health = CheckClaim(claim.clock, now_ms);
      if (health == ClaimHealth::kRunning) continue;
      claim.failed = true;
      UnpinClaimed(scope, claim);
      claim.keys.clear();  // unpinned now; the slot holds stay until release
      claim.locations.clear();
      failed.push_back(FailedClaim{.session = id, .claim = claim_id, .why = health});
    }
  }
  if (!failed.empty()) ++progress_epoch_;
  return failed;
}

CatalogCounts PoolCatalog::counts() const {
  CatalogCounts c;
  c.records = records_.size();
  c.scopes = scopes_.size();
  c.sessions = sessions_.size();
  for (const auto& [id, session] : sessions_) {
    for (const auto& [claim_id, claim] : session->claims)
      c.claims_in_flight += claim.failed ? 0 : 1;
    c.holdings += session->holdings.size();
  }
  c.evicted = evicted_;
  return c;
}

Status PoolCatalog::CheckInvariants() const {
  STRATA_RETURN_IF_ERROR(slots_.CheckInvariants());
  size_t indexed = 0;
  uint64_t owned_slots = 0;
  for (const auto& [id, scope] : scopes_) {
    STRATA_RETURN_IF_ERROR(scope->index.CheckInvariants());
    for (const IndexEntry& e : scope->index.Entries()) {
      auto it = records_.find(e.location.value);
      if (it == records_.end() || it->second.key != e.key || it->second.scope != id) {
        return Status::Internal("pool index entry " + e.key.ToFileStem() + " has no record");
      }
      ++indexed;
    }
  }
  if (indexed != records_.size()) return Status::Internal("pool records outside the index");
  for (const auto& [location, record] : records_) {
    owned_slots += record.slots.size();
    for (SlotId slot : record.slots) {
      if (slots_.IsFree(slot)) return Status::Internal("a pooled record owns a free slot");
    }
  }
  if (owned_slots + slots_.free_count() + slots_.retired_held_count() != slots_.slot_count()) {
    return Status::Internal("pool slots leak: " + std::to_string(owned_slots) + " owned, " +
                            std::to_string(slots_.free_count()) + " free, " +
                            std::to_string(slots_.retired_held_count()) + " retired");
  }
  return Status::Ok();
}

}  // namespace strata::pool
