#include "attach/store_dispatch.h"

#include <variant>

namespace strata::attach {

Status StoreDispatch::Handle(const AttachMessage& request, std::vector<AttachMessage>& replies) {
  if (const auto* lookup = std::get_if<LookupRequest>(&request)) {
    if (lookup->resident_tokens > lookup->tokens.size()) {
      return Status::InvalidArgument("Lookup: resident tokens beyond the history");
    }
    const PrefixHistory history(lookup->tokens);
    replies.emplace_back(LookupResult{
        .request_id = lookup->request_id,
        .hit = store_.Lookup(history, lookup->resident_tokens, lookup->before),
    });
    return Status::Ok();
  }
  if (const auto* fetch = std::get_if<FetchRequest>(&request)) {
    const uint64_t ticket = fetch->ticket.ticket.value;
    if (tickets_.contains(ticket)) {
      return Status::InvalidArgument("Fetch: ticket " + std::to_string(ticket) + " in use");
    }
    Status started = issuing_ ? store_.Fetch(fetch->hit, fetch->ticket)
                              : Status::Aborted("the runtime is detaching");
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
    if (checkpoints_.contains(c.checkpoint_id)) {
      return Status::InvalidArgument("Store: checkpoint " + std::to_string(c.checkpoint_id) +
                                     " already queued");
    }
    const StoreOutcome outcome = issuing_ ? store_.Store(c) : StoreOutcome::kDisabled;
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
      case StoreEvent::Kind::kStoreFailed: checkpoints_.erase(e.checkpoint_id); break;
      case StoreEvent::Kind::kFetched:
      case StoreEvent::Kind::kFetchFailed: tickets_.erase(e.ticket.value); break;
      case StoreEvent::Kind::kStopped: break;
    }
    out.emplace_back(e);
  }
}

}  // namespace strata::attach
