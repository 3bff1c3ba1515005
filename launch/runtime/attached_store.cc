#include "launch/runtime/attached_store.h"

#include <poll.h>

#include <algorithm>

namespace strata {

namespace {

// How long one wait for the channel's fd lasts inside Await's bound.
constexpr int kPollSliceMs = 50;

}  // namespace

AttachedStore::AttachedStore(std::unique_ptr<attach::AttachClient> client,
                             std::chrono::milliseconds answer_bound)
    : client_(std::move(client)), answer_bound_(answer_bound) {}

template <typename Wanted>
std::optional<attach::AttachEvent> AttachedStore::Await(Wanted wanted) const {
  const auto deadline = std::chrono::steady_clock::now() + answer_bound_;
  std::vector<attach::AttachEvent> fresh;
  while (true) {
    for (attach::AttachEvent& e : fresh) kept_.push_back(std::move(e));
    fresh.clear();
    auto it = std::find_if(kept_.begin(), kept_.end(), wanted);
    if (it != kept_.end()) {
      attach::AttachEvent found = std::move(*it);
      kept_.erase(it);
      return found;
    }
    if (!client_->Poll(fresh).ok() || std::chrono::steady_clock::now() > deadline) {
      for (attach::AttachEvent& e : fresh) kept_.push_back(std::move(e));
      return std::nullopt;
    }
    if (fresh.empty()) {
      pollfd p{client_->fd(), POLLIN, 0};
      (void)::poll(&p, 1, kPollSliceMs);
    }
  }
}

std::optional<HostHit> AttachedStore::AwaitHit(const Result<uint64_t>& id) const {
  if (!id.ok()) return std::nullopt;
  std::optional<attach::AttachEvent> answer = Await([&](const attach::AttachEvent& e) {
    const auto* r = std::get_if<attach::LookupResult>(&e);
    return r != nullptr && r->request_id == *id;
  });
  if (!answer) return std::nullopt;
  return std::get<attach::LookupResult>(*answer).hit;
}

std::optional<HostHit> AttachedStore::Lookup(const PrefixHistory& history, uint64_t resident_tokens,
                                             uint64_t before) {
  return AwaitHit(client_->Lookup(history.tokens(), resident_tokens, before));
}

LookupTicket AttachedStore::BeginLookup(const PrefixHistory& history, uint64_t resident_tokens,
                                        uint64_t before) {
  Result<uint64_t> id = client_->BeginLookup(history.tokens(), resident_tokens, before);
  return id.ok() ? LookupTicket(*id) : LookupTicket{};
}

std::optional<HostHit> AttachedStore::LookupFor(LookupTicket ticket, const PrefixHistory& history,
                                                uint64_t resident_tokens, uint64_t before) {
  if (ticket == LookupTicket{}) return Lookup(history, resident_tokens, before);
  return AwaitHit(client_->LookupFor(ticket.value, history.tokens(), resident_tokens, before));
}

LookupTicketStatus AttachedStore::TicketStatus(LookupTicket ticket) const {
  if (ticket == LookupTicket{}) return {};
  Result<uint64_t> id = client_->TicketStatus(ticket.value);
  if (!id.ok()) return {};
  std::optional<attach::AttachEvent> answer = Await([&](const attach::AttachEvent& e) {
    const auto* r = std::get_if<attach::TicketStatusResult>(&e);
    return r != nullptr && r->request_id == *id;
  });
  if (!answer) return {};
  return std::get<attach::TicketStatusResult>(*answer).status;
}

void AttachedStore::EndLookup(LookupTicket ticket) {
  if (ticket != LookupTicket{}) (void)client_->EndLookup(ticket.value);
}

void AttachedStore::Evicted(std::span<const EvictionNotice> notices) {
  (void)client_->Evicted(notices);
}

void AttachedStore::EvictionsLost() { (void)client_->EvictionsLost(); }

void AttachedStore::ExportPinned(ExportId export_id, const ExportDescription& description) {
  (void)client_->ExportPinned(export_id, description);
}

void AttachedStore::ExportRefused(ExportId export_id, ExportRefusal reason) {
  (void)client_->ExportRefused(export_id, reason);
}

StoreOutcome AttachedStore::Store(const PublishedCheckpoint& checkpoint) {
  if (!client_->Store(checkpoint).ok()) return StoreOutcome::kDisabled;
  std::optional<attach::AttachEvent> answer = Await([&](const attach::AttachEvent& e) {
    const auto* a = std::get_if<attach::StoreAnswer>(&e);
    return a != nullptr && a->checkpoint_id == checkpoint.checkpoint_id;
  });
  if (!answer) return StoreOutcome::kDisabled;
  return std::get<attach::StoreAnswer>(*answer).outcome;
}

Status AttachedStore::Fetch(const HostHit& hit, const InboundTicket& ticket) {
  return client_->Fetch(hit, ticket);
}

void AttachedStore::Poll(uint64_t /*now_ms*/, std::vector<StoreEvent>& events) {
  std::vector<attach::AttachEvent> fresh;
  (void)client_->Poll(fresh);  // once strata is gone, its kStopped event is among them
  for (attach::AttachEvent& e : fresh) kept_.push_back(std::move(e));
  for (attach::AttachEvent& e : kept_) {
    // A LookupResult, TicketStatusResult or StoreAnswer left here arrived
    // after its bound: dropped.
    if (auto* s = std::get_if<StoreEvent>(&e)) events.push_back(std::move(*s));
  }
  kept_.clear();
}

void AttachedStore::NotifyOnProgress(std::shared_ptr<WakeSignal> /*signal*/) {}

Status AttachedStore::Close() { return client_->Close(answer_bound_); }

}  // namespace strata
