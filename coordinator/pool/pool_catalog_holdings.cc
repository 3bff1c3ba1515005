// PoolCatalog: holdings and the exports that serve them (seed 2.15,
// "Exports"; pool_catalog.h).
#include <algorithm>
#include <string>

#include "coordinator/pool/pool_catalog.h"
#include "coordinator/pool/pool_catalog_state.h"
#include "coordinator/pool/pool_record_image.h"

namespace strata::pool {

void PoolCatalog::Unfile(ScopeState& scope, SessionId session, const Holding& holding) {
  auto bucket = scope.held.find(holding.bucket_digest);
  if (bucket == scope.held.end()) return;
  bucket->second.erase({session, holding.key});
  if (bucket->second.empty()) scope.held.erase(bucket);
}

Status PoolCatalog::Announce(SessionId session, bool reset, std::span<const Holding> held,
                             std::span<const Holding> withdrawn, const ExportRecordSizes& sizes) {
  STRATA_ASSIGN_OR_RETURN(Session * s, FindSession(session));
  ScopeState& scope = *scopes_.at(s->scope);
  if (reset) {
    for (const auto& [key, holding] : s->holdings) Unfile(scope, session, holding);
    s->holdings.clear();
  }
  for (const Holding& w : withdrawn) {
    auto it = s->holdings.find(w.key);
    // A withdrawal of an older generation leaves the newer holding be.
    if (it == s->holdings.end() || it->second.generation > w.generation) continue;
    Unfile(scope, session, it->second);
    s->holdings.erase(it);
  }
  s->export_sizes = sizes;
  size_t refused = 0;
  for (const Holding& h : held) {
    auto it = s->holdings.find(h.key);
    if (it != s->holdings.end()) {
      Unfile(scope, session, it->second);
      it->second = h;
    } else if (s->holdings.size() >= kHoldingsPerSessionMax) {
      ++refused;
      continue;
    } else {
      s->holdings.emplace(h.key, h);
    }
    scope.held[h.bucket_digest][{session, h.key}] = h;
  }
  if (refused != 0) {
    return Status::Busy(std::to_string(refused) + " holdings past the limit of " +
                        std::to_string(kHoldingsPerSessionMax));
  }
  return Status::Ok();
}

std::optional<Holding> PoolCatalog::LookupHeld(SessionId session, const PrefixHistory& history,
                                               uint64_t above_consumed,
                                               uint64_t max_consumed) const {
  Result<const Session*> s = FindSession(session);
  if (!s.ok()) return std::nullopt;
  const ScopeState& scope = *scopes_.at((*s)->scope);
  if (scope.held.empty()) return std::nullopt;
  const uint64_t top = std::min<uint64_t>(max_consumed, history.size());
  if (top <= above_consumed) return std::nullopt;
  // Deepest block first; within a block the deepest qualifying key wins.
  for (uint64_t block = top / PrefixHistory::kBlockTokens + 1;
       block-- > above_consumed / PrefixHistory::kBlockTokens;) {
    auto bucket = scope.held.find(history.aligned_digest(block));
    if (bucket == scope.held.end()) continue;
    const Holding* best = nullptr;
    for (const auto& [by, h] : bucket->second) {
      const uint64_t c = h.key.consumed;
      if (by.first == session || c <= above_consumed || c > top) continue;
      if (best != nullptr && best->key.consumed >= c) continue;
      if (scope.index.Contains(h.key) || history.key_at(c) != h.key) continue;
      best = &h;
    }
    if (best != nullptr) return *best;
  }
  return std::nullopt;
}

Result<std::optional<ExportStart>> PoolCatalog::BeginExport(SessionId session,
                                                            std::span<const PrefixKey> chain,
                                                            uint64_t now_ms) {
  STRATA_ASSIGN_OR_RETURN(Session * s, FindSession(session));
  ScopeState& scope = *scopes_.at(s->scope);
  if (chain.empty() || scope.index.Contains(chain.back())) return std::optional<ExportStart>();
  const PrefixKey& key = chain.back();
  SessionId holder{};
  const Holding* holding = nullptr;
  for (const auto& [id, other] : sessions_) {
    if (id == session || other->scope != s->scope) continue;
    auto it = other->holdings.find(key);
    if (it == other->holdings.end()) continue;
    holder = id;
    holding = &it->second;
    break;
  }
  if (holding == nullptr) return std::optional<ExportStart>();
  STRATA_RETURN_IF_ERROR(CheckClaimable(scope, chain.first(chain.size() - 1)));
  const ExportRecordSizes sizes = sessions_.at(holder)->export_sizes;
  if (!sizes.known()) {
    return Status::FailedPrecondition("the instance holding " + key.ToFileStem() +
                                      " announced no record sizes");
  }
  const std::optional<PrefixKey> parent =
      chain.size() > 1 ? std::optional<PrefixKey>(chain[chain.size() - 2]) : std::nullopt;
  const uint64_t page_tokens = scope.index.page_tokens();
  const uint64_t start_page = parent ? parent->consumed / page_tokens : 0;
  const uint64_t end_page = key.consumed / page_tokens;
  if (parent && parent->consumed >= key.consumed) {
    return Status::InvalidArgument("pool claim: " + parent->ToFileStem() + " is not below " +
                                   key.ToFileStem());
  }
  // Announced sizes are at most 2^40 each and pages 2^32: checked, so that
  // a hostile announcement cannot wrap to a small reservation.
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(end_page - start_page, sizes.page_record_bytes, &bytes) ||
      __builtin_add_overflow(bytes, kRecordImageHeaderBytes + sizes.row_segment_bytes, &bytes)) {
    return Status::InvalidArgument("the export of " + key.ToFileStem() + " overflows a size");
  }
  const PutRequest put{.key = key,
                       .parent = parent,
                       .bucket_digest = holding->bucket_digest,
                       .bytes = bytes,
                       .kind = PutKind::kCascade};
  const uint64_t generation = holding->generation;
  STRATA_ASSIGN_OR_RETURN(PutGrant grant, BeginPut(holder, put, now_ms));
  return std::optional<ExportStart>(
      ExportStart{.holder = holder,
                  .ask = ExportRequest{.put = grant.put,
                                       .key = key,
                                       .generation = generation,
                                       .parent = parent,
                                       .bucket_digest = put.bucket_digest,
                                       .start_page = start_page,
                                       .bytes = bytes,
                                       .slots = std::move(grant.slots)}});
}

bool PoolCatalog::SameScope(SessionId a, SessionId b) const {
  Result<const Session*> sa = FindSession(a);
  Result<const Session*> sb = FindSession(b);
  return sa.ok() && sb.ok() && (*sa)->scope == (*sb)->scope;
}

uint32_t PoolCatalog::page_tokens(SessionId session) const {
  Result<const Session*> s = FindSession(session);
  return s.ok() ? scopes_.at((*s)->scope)->index.page_tokens() : 0;
}

void PoolCatalog::DropHolding(SessionId holder, const PrefixKey& key) {
  Result<Session*> s = FindSession(holder);
  if (!s.ok()) return;
  auto it = (*s)->holdings.find(key);
  if (it == (*s)->holdings.end()) return;
  Unfile(*scopes_.at((*s)->scope), holder, it->second);
  (*s)->holdings.erase(it);
}

}  // namespace strata::pool
