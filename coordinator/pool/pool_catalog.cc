// PoolCatalog: sessions, puts and eviction. Lookups and claims are in
// pool_catalog_claims.cc.
#include "coordinator/pool/pool_catalog.h"

#include <algorithm>
#include <string>

#include "coordinator/pool/pool_catalog_state.h"

namespace strata::pool {

PoolCatalog::PoolCatalog(const CatalogLimits& limits)
    : limits_(limits), slots_(limits.slot_count) {}

PoolCatalog::~PoolCatalog() = default;

Result<PoolCatalog::Session*> PoolCatalog::FindSession(SessionId session) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) {
    return Status::NotFound("pool session " + std::to_string(session.value));
  }
  return it->second.get();
}

Result<const PoolCatalog::Session*> PoolCatalog::FindSession(SessionId session) const {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) {
    return Status::NotFound("pool session " + std::to_string(session.value));
  }
  return static_cast<const Session*>(it->second.get());
}

Result<SessionId> PoolCatalog::OpenSession(const InstanceId& instance, const PoolScope& scope,
                                           uint32_t page_tokens, uint64_t now_ms) {
  if (page_tokens == 0) return Status::InvalidArgument("pool session with zero page tokens");
  const ScopeId id = ComputeScopeId(scope);
  auto it = scopes_.find(id);
  if (it == scopes_.end()) {
    it = scopes_.emplace(id, std::make_unique<ScopeState>(scope, page_tokens)).first;
  } else if (it->second->index.page_tokens() != page_tokens) {
    return Status::InvalidArgument("pool scope known with " +
                                   std::to_string(it->second->index.page_tokens()) +
                                   " page tokens, session says " + std::to_string(page_tokens));
  }
  it->second->last_use_ms = std::max(it->second->last_use_ms, now_ms);
  // A reconnecting instance replaces its previous session; its records stay.
  for (auto s = sessions_.begin(); s != sessions_.end(); ++s) {
    if (s->second->instance == instance) {
      EndSessionState(*s->second);
      sessions_.erase(s);
      break;
    }
  }
  const SessionId session(next_id_++);
  auto state = std::make_unique<Session>();
  state->instance = instance;
  state->scope = id;
  sessions_.emplace(session, std::move(state));
  return session;
}

void PoolCatalog::EndSessionState(Session& session) {
  ScopeState& scope = *scopes_.at(session.scope);
  for (const auto& [put, pending] : session.puts) DropPending(scope, pending);
  session.puts.clear();
  for (auto& [id, state] : sessions_) {
    if (state.get() != &session) continue;
    for (const auto& [key, holding] : session.holdings) Unfile(scope, id, holding);
  }
  session.holdings.clear();
  while (!session.claims.empty()) EndClaim(session, session.claims.begin()->first);
  ++progress_epoch_;
}

Status PoolCatalog::EndSession(SessionId session) {
  STRATA_ASSIGN_OR_RETURN(Session * s, FindSession(session));
  EndSessionState(*s);
  ScopeState& scope = *scopes_.at(s->scope);
  std::vector<PrefixKey> own;
  for (const auto& [location, record] : records_) {
    if (record.owner == s->instance && record.kind == PutKind::kOwn && record.scope == s->scope) {
      own.push_back(record.key);
    }
  }
  for (const PrefixKey& key : own) {
    // An earlier Remove may already have taken it as a descendant.
    Result<std::vector<RemovedRecord>> removed = scope.index.Remove(key);
    if (removed.ok()) Forget(*removed);
  }
  sessions_.erase(session);
  return Status::Ok();
}

Result<PutGrant> PoolCatalog::BeginPut(SessionId session, const PutRequest& put, uint64_t now_ms) {
  STRATA_ASSIGN_OR_RETURN(Session * s, FindSession(session));
  ScopeState& scope = *scopes_.at(s->scope);
  if (put.bytes == 0) return Status::InvalidArgument("pool put of zero bytes");
  // Compared before rounding up: a size near 2^64 would wrap to few slots.
  const uint64_t need = put.bytes / limits_.slot_bytes + (put.bytes % limits_.slot_bytes != 0);
  if (put.bytes > limits_.slot_bytes * slots_.slot_count() || need > slots_.slot_count()) {
    return Status::InvalidArgument("pool put of " + std::to_string(put.bytes) +
                                   " bytes exceeds the arena");
  }
  if (const std::optional<IndexEntry> held = scope.index.Find(put.key)) {
    // Only a committed record counts as held: a put still in flight (this
    // or another instance's) may yet be aborted, and with it what was
    // indexed under it.
    if (held->state != TransferState::kReady) {
      return Status::Busy("pool record " + put.key.ToFileStem() + " is being put");
    }
    return Status::AlreadyExists("pool record " + put.key.ToFileStem());
  }
  // A record holds only its tail: under a parent this scope lacks it would
  // be filed as a root of the wrong length, and no claim of it could land.
  if (put.parent && !scope.index.Contains(*put.parent)) {
    return Status::NotFound("pool put of " + put.key.ToFileStem() + ": its parent " +
                            put.parent->ToFileStem() + " is not pooled");
  }
  // The parent stays while room is made: evicted, it would leave the record a root.
  if (put.parent) STRATA_RETURN_IF_ERROR(scope.index.Pin(*put.parent));
  const bool room = MakeRoom(s->scope, static_cast<uint32_t>(need));
  if (put.parent) (void)scope.index.Unpin(*put.parent);
  if (!room) {
    return Status::Busy("pool arena full: " + std::to_string(need) + " slots wanted, " +
                        std::to_string(slots_.free_count()) + " free");
  }
  const NodeLocation location(next_id_++);
  NewRecord entry;
  entry.key = put.key;
  entry.parent = put.parent;
  entry.bucket_digest = put.bucket_digest;
  entry.location = location;
  entry.state = TransferState::kInFlight;
  STRATA_RETURN_IF_ERROR(scope.index.Insert(entry, now_ms).status());
  STRATA_RETURN_IF_ERROR(scope.index.Pin(put.key));
  std::vector<SlotId> taken = *slots_.Take(static_cast<uint32_t>(need));
  records_.emplace(location.value, Record{.scope = s->scope,
                                          .key = put.key,
                                          .owner = s->instance,
                                          .kind = put.kind,
                                          .bytes = put.bytes,
                                          .slots = taken});
  const PutId id(next_id_++);
  s->puts.emplace(id, PendingPut{.key = put.key, .location = location});
  scope.last_use_ms = std::max(scope.last_use_ms, now_ms);
  return PutGrant{.put = id, .slots = std::move(taken)};
}

Status PoolCatalog::CommitPut(SessionId session, PutId put, uint64_t checksum, uint64_t now_ms) {
  STRATA_ASSIGN_OR_RETURN(Session * s, FindSession(session));
  auto it = s->puts.find(put);
  if (it == s->puts.end()) return Status::NotFound("pool put " + std::to_string(put.value));
  ScopeState& scope = *scopes_.at(s->scope);
  const PendingPut pending = it->second;
  s->puts.erase(it);
  const PrefixKey& key = pending.key;
  const std::optional<IndexEntry> entry = scope.index.Find(key);
  if (!entry.has_value() || entry->location != pending.location) {
    return Status::NotFound("pool put " + std::to_string(put.value) +
                            ": its record was removed (its parent went)");
  }
  // The page-only rule may drop the parent's row from lookups; its bytes stay
  // in its slots until the record goes.
  // Unpin first: a commit that fails leaves the record pending, never ready.
  STRATA_RETURN_IF_ERROR(scope.index.Unpin(key).status());
  records_.at(pending.location.value).checksum = checksum;
  STRATA_RETURN_IF_ERROR(scope.index.SetState(key, TransferState::kReady).status());
  STRATA_RETURN_IF_ERROR(scope.index.Touch(key, now_ms));
  ++progress_epoch_;
  return Status::Ok();
}

Status PoolCatalog::AbortPut(SessionId session, PutId put) {
  STRATA_ASSIGN_OR_RETURN(Session * s, FindSession(session));
  auto it = s->puts.find(put);
  if (it == s->puts.end()) return Status::NotFound("pool put " + std::to_string(put.value));
  DropPending(*scopes_.at(s->scope), it->second);
  s->puts.erase(it);
  ++progress_epoch_;
  return Status::Ok();
}

bool PoolCatalog::PutWritable(SessionId session, PutId put) const {
  auto s = sessions_.find(session);
  if (s == sessions_.end()) return false;
  auto it = s->second->puts.find(put);
  if (it == s->second->puts.end()) return false;
  const std::optional<IndexEntry> entry = scopes_.at(s->second->scope)->index.Find(it->second.key);
  return entry.has_value() && entry->location == it->second.location;
}

void PoolCatalog::DropPending(ScopeState& scope, const PendingPut& put) {
  const std::optional<IndexEntry> entry = scope.index.Find(put.key);
  if (!entry.has_value() || entry->location != put.location) return;
  Result<std::vector<RemovedRecord>> removed = scope.index.Remove(put.key);
  if (removed.ok()) Forget(*removed);
}

void PoolCatalog::Forget(std::span<const RemovedRecord> removed) {
  for (const RemovedRecord& r : removed) {
    auto it = records_.find(r.location.value);
    if (it == records_.end()) continue;
    // Retire cannot fail here: the catalog owns exactly these slots.
    Status retired = slots_.Retire(it->second.slots);
    STRATA_ASSERT(retired.ok(), retired.ToString());
    records_.erase(it);
  }
}

bool PoolCatalog::EvictOneFrom(ScopeState& scope) {
  const auto committed = [](const IndexEntry& e) { return e.state == TransferState::kReady; };
  EvictionDecision d = scope.index.EvictOne(committed);
  if (d.empty()) return false;
  evicted_ += d.removed.size();
  Forget(d.removed);
  ++progress_epoch_;
  return true;
}

bool PoolCatalog::MakeRoom(const ScopeId& scope, uint32_t slot_count) {
  if (slots_.free_count() >= slot_count) return true;
  std::vector<ScopeState*> order{scopes_.at(scope).get()};
  std::vector<ScopeState*> others;
  for (auto& [id, state] : scopes_) {
    if (id != scope) others.push_back(state.get());
  }
  std::sort(others.begin(), others.end(), [](const ScopeState* a, const ScopeState* b) {
    return a->last_use_ms < b->last_use_ms;
  });
  order.insert(order.end(), others.begin(), others.end());
  for (ScopeState* state : order) {
    // Each step removes a record or compacts one; both are bounded by its size.
    for (size_t step = 0; step <= 2 * state->index.size() + 1; ++step) {
      if (slots_.free_count() >= slot_count) return true;
      if (!EvictOneFrom(*state)) break;
    }
  }
  return slots_.free_count() >= slot_count;
}

}  // namespace strata::pool
