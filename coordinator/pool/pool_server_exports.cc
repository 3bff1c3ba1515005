// PoolServer's side of exports (docs/pool.md, "Exports"): a claim that
// needs one asks its holder, and the relay's answers go to the requesters.
#include <spdlog/spdlog.h>

#include <utility>
#include <vector>

#include "coordinator/pool/pool_server_loop.h"

namespace strata::pool {

bool PoolServer::Loop::BeginExport(Connection& c, const PoolClaim& claim, uint64_t now) {
  std::optional<ExportRelay::Begun> begun = relay.Begin(catalog, *c.session, claim, now);
  if (!begun.has_value()) return false;
  if (auto* answer = std::get_if<PoolClaimAnswer>(&*begun)) {
    answer->progress_epoch = catalog.progress_epoch();
    SendRelayAnswers({RelayAnswer{.requester = *c.session, .claim = claim, .answer = *answer}});
  } else if (auto* ask = std::get_if<ExportRelay::Ask>(&*begun)) {
    const ExportRequest& r = ask->ask.ask;
    if (data_sessions.contains(ask->holder.value)) {
      // The holder writes the export's windows like a put's.
      grants.Note(ask->holder,
                  PoolPut{.request_id = 0,
                          .put = PutRequest{.key = r.key,
                                            .parent = r.parent,
                                            .bucket_digest = r.bucket_digest,
                                            .bytes = r.bytes,
                                            .kind = PutKind::kCascade}},
                  PoolPutAnswer{.request_id = 0,
                                .status = Status::Ok(),
                                .put = r.put,
                                .slots = r.slots,
                                .progress_epoch = 0});
    }
    spdlog::debug("pool: asking session {} to export {} for session {}", ask->holder.value,
                  r.key.ToFileStem(), c.session->value);
    Connection* holder = SessionConnection(ask->holder);
    if (holder == nullptr || !holder->socket.Send(ask->ask).ok()) {
      (void)catalog.AbortPut(ask->holder, r.put);
      SendRelayAnswers(
          relay.PutEnded(catalog, ask->holder, r.put, ExportRelay::Ended::kCommitFailed, now));
    }
  }
  Publish();
  return true;
}

void PoolServer::Loop::SendRelayAnswers(std::vector<RelayAnswer> answers) {
  std::vector<std::pair<Connection*, PoolMessage>> sends;
  for (RelayAnswer& a : answers) {
    Connection* to = SessionConnection(a.requester);
    if (to == nullptr) continue;
    PoolMessage answer(std::move(a.answer));
    if (data_sessions.contains(a.requester.value)) grants.Note(a.requester, a.claim, answer);
    CountExchange(traffic, a.claim, answer);
    sends.emplace_back(to, std::move(answer));
  }
  DropUnwritablePuts();
  // Published before the answers leave, as every answer's counts are: a
  // requester that has its answer then reads Stats() sees what led to it
  // (the export's refusal or loss).
  Publish();
  for (auto& [to, answer] : sends) (void)to->socket.Send(answer);
}

PoolServer::Loop::Connection* PoolServer::Loop::SessionConnection(SessionId session) {
  for (auto& [fd, c] : connections) {
    if (c->session == session) return c.get();
  }
  return nullptr;
}

}  // namespace strata::pool
