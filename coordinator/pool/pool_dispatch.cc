#include "coordinator/pool/pool_dispatch.h"

#include <type_traits>

namespace strata::pool {
namespace {

std::optional<std::string> HelloProblem(const PoolHello& hello) {
  if (hello.protocol_version != kPoolProtocolVersion) {
    return "protocol version " + std::to_string(hello.protocol_version) + ", the manager speaks " +
           std::to_string(kPoolProtocolVersion);
  }
  if (hello.instance_sources.empty()) return std::string("no instance sources (GPU UUIDs or id)");
  if (hello.page_tokens == 0) return std::string("zero page tokens");
  if (hello.rank_plane_bytes.empty()) return std::string("no ranks");
  for (const std::vector<uint64_t>& planes : hello.rank_plane_bytes) {
    if (planes.size() < 2) return std::string("a rank without a row plane and a page plane");
  }
  return std::nullopt;
}

PoolMessage Answer(PoolCatalog& catalog, SessionId session, const PoolLookup& m,
                   uint64_t /*now_ms*/) {
  PoolLookupAnswer a;
  a.request_id = m.request_id;
  if (m.before > m.tokens.size() || m.resident_tokens > m.before) {
    a.status = Status::InvalidArgument("lookup bounds outside the history");
    return a;
  }
  const PrefixHistory history(m.tokens);
  Result<std::optional<LookupHit>> hit =
      catalog.Lookup(session, history, m.resident_tokens, m.before);
  if (!hit.ok()) {
    a.status = hit.status();
    return a;
  }
  if (hit->has_value()) {
    a.base_consumed = (*hit)->base_consumed;
    for (const ChainLink& link : (*hit)->chain) {
      a.chain.push_back(link.key);
      a.tail_pages.push_back(link.tail_page_count);
    }
  }
  // A longer prefix another instance holds: claiming it asks for its export
  // (export_relay.h), a record under the chain's endpoint (or a root).
  const uint64_t above = a.chain.empty() ? m.resident_tokens : a.chain.back().consumed;
  if (std::optional<Holding> held = catalog.LookupHeld(session, history, above, m.before)) {
    const uint64_t page_tokens = catalog.page_tokens(session);
    const uint64_t below = a.chain.empty() ? 0 : a.chain.back().consumed;
    a.chain.push_back(held->key);
    a.tail_pages.push_back(
        static_cast<uint32_t>(held->key.consumed / page_tokens - below / page_tokens));
  }
  return a;
}

PoolMessage Answer(PoolCatalog& catalog, SessionId session, const PoolPut& m, uint64_t now_ms) {
  PoolPutAnswer a{.request_id = m.request_id, .status = Status::Ok(), .put = {}, .slots = {}};
  Result<PutGrant> grant = catalog.BeginPut(session, m.put, now_ms);
  if (!grant.ok()) {
    a.status = grant.status();
  } else {
    a.put = grant->put;
    a.slots = std::move(grant->slots);
  }
  return a;
}

PoolMessage Answer(PoolCatalog& catalog, SessionId session, const PoolCommit& m, uint64_t now_ms) {
  return PoolDone{.request_id = m.request_id,
                  .status = catalog.CommitPut(session, m.put, m.checksum, now_ms)};
}

PoolMessage Answer(PoolCatalog& catalog, SessionId session, const PoolAbort& m,
                   uint64_t /*now_ms*/) {
  return PoolDone{.request_id = m.request_id, .status = catalog.AbortPut(session, m.put)};
}

PoolMessage Answer(PoolCatalog& catalog, SessionId session, const PoolClaim& m, uint64_t now_ms) {
  PoolClaimAnswer a{.request_id = m.request_id,
                    .status = Status::Ok(),
                    .claim = {},
                    .budget_ms = 0,
                    .records = {}};
  Result<ClaimGrant> grant = catalog.Claim(session, m.chain, now_ms);
  if (!grant.ok()) {
    a.status = grant.status();
  } else {
    a.claim = grant->claim;
    a.budget_ms = grant->deadline_ms - now_ms;
    a.records = std::move(grant->records);
  }
  return a;
}

PoolMessage Answer(PoolCatalog& catalog, SessionId session, const PoolAnnounce& m,
                   uint64_t /*now_ms*/) {
  return PoolDone{.request_id = m.request_id,
                  .status = catalog.Announce(session, m.reset, m.held, m.withdrawn, m.sizes)};
}

PoolMessage Answer(PoolCatalog& catalog, SessionId session, const PoolRelease& m,
                   uint64_t /*now_ms*/) {
  return PoolDone{.request_id = m.request_id, .status = catalog.ReleaseClaim(session, m.claim)};
}

template <typename T>
constexpr bool kIsRequest =
    std::is_same_v<T, PoolLookup> || std::is_same_v<T, PoolPut> || std::is_same_v<T, PoolCommit> ||
    std::is_same_v<T, PoolAbort> || std::is_same_v<T, PoolClaim> ||
    std::is_same_v<T, PoolRelease> || std::is_same_v<T, PoolAnnounce>;

}  // namespace

std::variant<HelloAccepted, PoolHelloReject> AcceptHello(PoolCatalog& catalog,
                                                         const ManagerIdentity& manager,
                                                         const PoolHello& hello, uint64_t now_ms) {
  if (std::optional<std::string> problem = HelloProblem(hello)) {
    return PoolHelloReject{.reason = *problem};
  }
  PoolScope scope{.pool_name = manager.pool_name,
                  .model_identity = hello.model_identity,
                  .layout = hello.layout,
                  .rank_plane_bytes = hello.rank_plane_bytes};
  const InstanceId instance = ComputeInstanceId(manager.pool_name, hello.instance_sources);
  Result<SessionId> session = catalog.OpenSession(instance, scope, hello.page_tokens, now_ms);
  if (!session.ok()) return PoolHelloReject{.reason = session.status().ToString()};
  return HelloAccepted{.session = *session,
                       .accept = PoolHelloAccept{.protocol_version = kPoolProtocolVersion,
                                                 .pool_name = manager.pool_name,
                                                 .generation = manager.generation,
                                                 .scope = ComputeScopeId(scope),
                                                 .instance = instance,
                                                 .slot_bytes = manager.slot_bytes,
                                                 .slot_count = manager.slot_count,
                                                 .arena_path = {},
                                                 .proof = std::nullopt,
                                                 .data_token = std::nullopt,
                                                 .window_bytes = 0,
                                                 .window_credits = 0}};
}

std::optional<PoolMessage> AnswerRequest(PoolCatalog& catalog, SessionId session,
                                         const PoolMessage& request, uint64_t now_ms) {
  return std::visit(
      [&](const auto& m) -> std::optional<PoolMessage> {
        using T = std::decay_t<decltype(m)>;
        if constexpr (kIsRequest<T>) {
          PoolMessage answer = Answer(catalog, session, m, now_ms);
          // Every answer carries the progress count after the request.
          std::visit(
              [&](auto& a) {
                if constexpr (requires { a.progress_epoch; }) {
                  a.progress_epoch = catalog.progress_epoch();
                }
              },
              answer);
          return answer;
        } else {
          return std::nullopt;
        }
      },
      request);
}

}  // namespace strata::pool
