#include "attach/store_dispatch.h"

#include <variant>

namespace strata::attach {
namespace {

std::string JoinIds(const std::set<uint64_t>& ids) {
  std::string out;
  for (uint64_t id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out;
}

}  // namespace

Status StoreDispatch::NotIssuingReason() const {
  if (store_stopped()) return Status::Aborted("the store stopped: " + stop_reason_.message());
  return Status::Aborted("the runtime is detaching");
}

StoreDispatch::~StoreDispatch() {
  for (const auto& [id, ticket] : tickets_begun_) store_.EndLookup(ticket);
}

Status StoreDispatch::HandleLookup(const LookupRequest& lookup,
                                   std::vector<AttachMessage>& replies) {
  if (lookup.resident_tokens > lookup.tokens.size()) {
    return Status::InvalidArgument("Lookup: resident tokens beyond the history");
  }
  const PrefixHistory history(lookup.tokens);
  switch (lookup.step) {
    case LookupStep::kBegin: {
      if (tickets_begun_.contains(lookup.request_id)) {
        return Status::InvalidArgument("Lookup: ticket " + std::to_string(lookup.request_id) +
                                       " begun twice");
      }
      if (tickets_begun_.size() >= kAttachTicketsMax) return Status::Ok();  // admission: one step
      const LookupTicket t = store_.BeginLookup(history, lookup.resident_tokens, lookup.before);
      if (t != LookupTicket{}) tickets_begun_.emplace(lookup.request_id, t);
      return Status::Ok();
    }
    case LookupStep::kAdmit: {
      auto it = tickets_begun_.find(lookup.begun);
      replies.emplace_back(LookupResult{
          .request_id = lookup.request_id,
          .hit = it != tickets_begun_.end()
                     ? store_.LookupFor(it->second, history, lookup.resident_tokens, lookup.before)
                     : store_.Lookup(history, lookup.resident_tokens, lookup.before),
      });
      return Status::Ok();
    }
    case LookupStep::kLookup: break;
  }
  replies.emplace_back(LookupResult{
      .request_id = lookup.request_id,
      .hit = store_.Lookup(history, lookup.resident_tokens, lookup.before),
  });
  return Status::Ok();
}

Status StoreDispatch::Handle(const AttachMessage& request, std::vector<AttachMessage>& replies) {
  const bool issuing = issuing_ && !store_stopped();
  if (const auto* lookup = std::get_if<LookupRequest>(&request)) {
    return HandleLookup(*lookup, replies);
  }
  if (const auto* end = std::get_if<EndLookup>(&request)) {
    if (auto node = tickets_begun_.extract(end->begun)) store_.EndLookup(node.mapped());
    return Status::Ok();
  }
  if (const auto* ask = std::get_if<TicketStatusRequest>(&request)) {
    auto it = tickets_begun_.find(ask->begun);
    replies.emplace_back(TicketStatusResult{
        .request_id = ask->request_id,
        .status =
            it != tickets_begun_.end() ? store_.TicketStatus(it->second) : LookupTicketStatus{},
    });
    return Status::Ok();
  }
  if (const auto* evicted = std::get_if<EvictedNotices>(&request)) {
    store_.Evicted(evicted->notices);
    return Status::Ok();
  }
  if (const auto* pinned = std::get_if<ExportPinnedReply>(&request)) {
    if (issuing_) {
      store_.ExportPinned(pinned->export_id, pinned->description);
    } else {
      // Detaching: the pinned planes are about to be unmapped.
      store_.ExportRefused(pinned->export_id, ExportRefusal::kNotFound);
    }
    return Status::Ok();
  }
  if (const auto* refused = std::get_if<ExportRefusedReply>(&request)) {
    store_.ExportRefused(refused->export_id, refused->reason);
    return Status::Ok();
  }
  if (std::holds_alternative<EvictionsLost>(request)) {
    store_.EvictionsLost();
    return Status::Ok();
  }
  if (const auto* fetch = std::get_if<FetchRequest>(&request)) {
    const uint64_t ticket = fetch->ticket.ticket.value;
    if (tickets_.contains(ticket) || abandoned_.tickets.contains(ticket)) {
      return Status::InvalidArgument("Fetch: ticket " + std::to_string(ticket) + " in use");
    }
    Status started = issuing ? store_.Fetch(fetch->hit, fetch->ticket) : NotIssuingReason();
    if (started.ok()) {
      tickets_.insert(ticket);
    } else {
      replies.emplace_back(StoreEvent{.kind = StoreEvent::Kind::kFetchFailed,
                                      .ticket = fetch->ticket.ticket,
                                      .key = fetch->hit.endpoint,
                                      .status = std::move(started)});
    }
    return Status::Ok();
  }
  if (const auto* store = std::get_if<StoreRequest>(&request)) {
    const PublishedCheckpoint& c = store->checkpoint;
    if (checkpoints_.contains(c.checkpoint_id) ||
        abandoned_.checkpoints.contains(c.checkpoint_id)) {
      return Status::InvalidArgument("Store: checkpoint " + std::to_string(c.checkpoint_id) +
                                     " already queued");
    }
    const StoreOutcome outcome = issuing ? store_.Store(c) : StoreOutcome::kDisabled;
    if (outcome == StoreOutcome::kQueued) checkpoints_.insert(c.checkpoint_id);
    replies.emplace_back(StoreAnswer{.checkpoint_id = c.checkpoint_id, .outcome = outcome});
    return Status::Ok();
  }
  return Status::InvalidArgument("not a request a runtime sends after its Hello");
}

void StoreDispatch::OnEvents(const std::vector<StoreEvent>& events,
                             std::vector<AttachMessage>& out) {
  for (const StoreEvent& e : events) {
    switch (e.kind) {
      case StoreEvent::Kind::kStored:
      case StoreEvent::Kind::kStoreFailed:
        checkpoints_.erase(e.checkpoint_id);
        abandoned_.checkpoints.erase(e.checkpoint_id);
        break;
      case StoreEvent::Kind::kFetched:
      case StoreEvent::Kind::kFetchFailed:
        tickets_.erase(e.ticket.value);
        abandoned_.tickets.erase(e.ticket.value);
        break;
      case StoreEvent::Kind::kStopped:
        if (!store_stopped()) {
          stop_reason_ = e.status.ok() ? Status::Unavailable("no reason given") : e.status;
        }
        abandoned_.checkpoints.insert(checkpoints_.begin(), checkpoints_.end());
        abandoned_.tickets.insert(tickets_.begin(), tickets_.end());
        checkpoints_.clear();
        tickets_.clear();
        break;
      case StoreEvent::Kind::kExportRequested:
        if (!issuing_) {
          // The runtime is detaching: its planes go, so nothing of them is pinned.
          store_.ExportRefused(e.export_id, ExportRefusal::kNotFound);
          continue;
        }
        break;
      case StoreEvent::Kind::kExportEnded: break;  // the runtime unpins it
    }
    out.emplace_back(e);
  }
}

Status StoreDispatch::DetachStatus() const {
  if (abandoned_.empty()) return Status::Ok();
  std::string jobs;
  if (!abandoned_.checkpoints.empty()) jobs = "checkpoint(s) " + JoinIds(abandoned_.checkpoints);
  if (!abandoned_.tickets.empty()) {
    jobs +=
        (jobs.empty() ? "" : "; ") + std::string("fetch ticket(s) ") + JoinIds(abandoned_.tickets);
  }
  return Status::Aborted(
      "the store stopped (" + stop_reason_.message() + ") before reporting " +
      std::to_string(abandoned_.size()) + " job(s): " + jobs +
      "; the detach is complete and no copy into this rank's planes runs any more, but on other "
      "ranks the same ids may still be written until their runtimes detach");
}

}  // namespace strata::attach
