// Test doubles for driving an AttachServer in the test's own thread:
// a store that reports what the test scripts, transfers whose copies finish
// when the test says, and planes that only record Import and Release.
#pragma once

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "store/tier/host_store.h"
#include "store/transfer/plane_importer.h"
#include "store/transfer/transfers.h"
#include "tests/support/manual_transfers.h"

namespace strata::attach::testing {

using strata::testing::ManualTransfers;

// Queues every Store (kQueued) and starts every Fetch; Poll first polls
// `copies` (as a real store's transport polls its transfers, so a gate
// around them counts down), then reports the events the test queued.
class ScriptedStore final : public HostStore {
 public:
  std::optional<HostHit> Lookup(const PrefixHistory& /*history*/, uint64_t /*resident_tokens*/,
                                uint64_t /*before*/) override {
    ++lookups;
    return std::nullopt;
  }
  // Tickets 100, 101, ... while `give_tickets`; none otherwise.
  LookupTicket BeginLookup(const PrefixHistory& /*history*/, uint64_t /*resident_tokens*/,
                           uint64_t /*before*/) override {
    if (!give_tickets) return LookupTicket{};
    return begun.emplace_back(100 + begun.size());
  }
  std::optional<HostHit> LookupFor(LookupTicket ticket, const PrefixHistory& /*history*/,
                                   uint64_t /*resident_tokens*/, uint64_t /*before*/) override {
    admitted.push_back(ticket);
    return std::nullopt;
  }
  // A ticket it began: pending until admitted, then ready with the pooled
  // endpoint `pool_consumed`; kNone otherwise.
  LookupTicketStatus TicketStatus(LookupTicket ticket) const override {
    if (std::find(begun.begin(), begun.end(), ticket) == begun.end()) return {};
    const bool ready = std::find(admitted.begin(), admitted.end(), ticket) != admitted.end();
    return {.state = ready ? LookupTicketState::kReady : LookupTicketState::kPending,
            .pool_consumed = ready ? pool_consumed : 0,
            .admitted_consumed = 0,
            .admissions = ready ? 1u : 0u,
            .answered_late = false,
            .retry_used = false};
  }
  void EndLookup(LookupTicket ticket) override { ended.push_back(ticket); }
  void Evicted(std::span<const EvictionNotice> notices) override {
    evicted.insert(evicted.end(), notices.begin(), notices.end());
  }
  void EvictionsLost() override { ++evictions_lost; }
  void ExportPinned(ExportId export_id, const ExportDescription& description) override {
    pinned.emplace_back(export_id, description);
  }
  void ExportRefused(ExportId export_id, ExportRefusal reason) override {
    refused.emplace_back(export_id, reason);
  }
  StoreOutcome Store(const PublishedCheckpoint& /*checkpoint*/) override {
    ++stores;
    return StoreOutcome::kQueued;
  }
  Status Fetch(const HostHit& /*hit*/, const InboundTicket& /*ticket*/) override {
    ++fetches;
    return Status::Ok();
  }
  void Poll(uint64_t /*now_ms*/, std::vector<StoreEvent>& events) override {
    ++polls;
    if (copies != nullptr) {
      std::vector<TransferCompletion> done;
      copies->Poll(done);
    }
    for (StoreEvent& e : queued) events.push_back(std::move(e));
    queued.clear();
  }
  void NotifyOnProgress(std::shared_ptr<WakeSignal> /*signal*/) override {}
  int PollFd() const override { return poll_fd; }
  StoreStats Stats() const override { return {}; }
  Status Close() override { return Status::Ok(); }

  Transfers* copies = nullptr;  // polled by Poll; null: none
  int poll_fd = -1;             // PollFd (an eventfd the test owns; Poll leaves it); -1: none
  int polls = 0;
  std::vector<StoreEvent> queued;  // reported by the next Poll
  int stores = 0;
  int fetches = 0;
  int lookups = 0;  // one-step lookups
  bool give_tickets = true;
  uint64_t pool_consumed = 0;  // an admitted ticket's pooled endpoint (TicketStatus)
  std::vector<LookupTicket> begun, admitted, ended;
  std::vector<EvictionNotice> evicted;  // every notice Evicted was handed
  int evictions_lost = 0;
  std::vector<std::pair<ExportId, ExportDescription>> pinned;  // ExportPinned's
  std::vector<std::pair<ExportId, ExportRefusal>> refused;     // ExportRefused's
};

// A store's event about checkpoint `id` (kStored / kStoreFailed) or ticket `id`.
inline StoreEvent EventFor(StoreEvent::Kind kind, uint64_t id) {
  StoreEvent e;
  e.kind = kind;
  if (kind == StoreEvent::Kind::kStored || kind == StoreEvent::Kind::kStoreFailed) {
    e.checkpoint_id = id;
  } else {
    e.ticket = JobId(id);
  }
  return e;
}

// The store stopped for good: a sharded store that lost rank 2.
inline StoreEvent StoppedEvent() {
  StoreEvent e;
  e.kind = StoreEvent::Kind::kStopped;
  e.status = Status::Unavailable("lost rank 2: its record link closed");
  return e;
}

// Records Import and Release; maps nothing.
class RecordingImporter final : public PlaneImporter {
 public:
  explicit RecordingImporter(CacheGeometry g) : geometry_(std::move(g)) {}
  const CacheGeometry& shared_geometry() const override { return geometry_; }
  std::vector<PlaneHandleKind> handle_kinds() const override { return {PlaneHandleKind::kMemfd}; }
  Status Import(std::span<const PlaneFd> /*fds*/) override {
    imported_ = true;
    return Status::Ok();
  }
  void Release() override {
    imported_ = false;
    ++releases;
  }
  bool imported() const override { return imported_; }

  int releases = 0;

 private:
  CacheGeometry geometry_;
  bool imported_ = false;
};

}  // namespace strata::attach::testing
