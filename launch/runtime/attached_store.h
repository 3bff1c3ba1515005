// AttachedStore: the HostStore interface over an attach channel
// (attach/client/attach_client.h), so the synthetic runtime drives a
// `strata rank` in another process exactly as it drives a store it links.
//
// The channel's calls return at once and their results arrive as events;
// HostStore's Lookup, LookupFor, TicketStatus and Store return their
// answer, so those wait for it here (bounded by `answer_bound`), keeping
// every other event that
// arrives meanwhile for the next Poll, in order. A real runtime would keep
// working instead; the synthetic runtime's model thread has nothing else to do.
//
// Thread: the runtime's one thread.
#pragma once

#include <chrono>
#include <deque>
#include <memory>

#include "attach/client/attach_client.h"
#include "store/tier/host_store.h"

namespace strata {

class AttachedStore final : public HostStore {
 public:
  // `client` is attached; owned here.
  AttachedStore(std::unique_ptr<attach::AttachClient> client,
                std::chrono::milliseconds answer_bound);

  // A Lookup whose answer does not come within the bound (or a lost
  // channel) is a miss; the channel's kStopped event follows through Poll.
  std::optional<HostHit> Lookup(const PrefixHistory& history, uint64_t resident_tokens,
                                uint64_t before) override;
  // Two-step lookups over the channel: the rank's store keeps the ticket
  // (BeginLookup waits for nothing; no ticket when the request cannot be
  // sent). LookupFor answers as Lookup does on a lost or late answer;
  // TicketStatus then answers kNone.
  LookupTicket BeginLookup(const PrefixHistory& history, uint64_t resident_tokens,
                           uint64_t before) override;
  std::optional<HostHit> LookupFor(LookupTicket ticket, const PrefixHistory& history,
                                   uint64_t resident_tokens, uint64_t before) override;
  LookupTicketStatus TicketStatus(LookupTicket ticket) const override;
  void EndLookup(LookupTicket ticket) override;
  // kDisabled when the request cannot be sent or answered within the bound.
  StoreOutcome Store(const PublishedCheckpoint& checkpoint) override;
  Status Fetch(const HostHit& hit, const InboundTicket& ticket) override;
  // Sent to the rank's store (no answer); a lost channel drops them, and
  // its kStopped event follows through Poll.
  void Evicted(std::span<const EvictionNotice> notices) override;
  void EvictionsLost() override;
  void ExportPinned(ExportId export_id, const ExportDescription& description) override;
  void ExportRefused(ExportId export_id, ExportRefusal reason) override;
  void Poll(uint64_t now_ms, std::vector<StoreEvent>& events) override;
  // Strata runs its own maintenance; nothing to notify from here.
  void NotifyOnProgress(std::shared_ptr<WakeSignal> signal) override;
  // Strata's statistics are on its own /metrics; none here.
  StoreStats Stats() const override { return {}; }
  // Detaches: strata finishes every copy into the planes and unmaps them.
  Status Close() override;

 private:
  // Polls the channel until `wanted` returns true for an event (which is
  // taken out and returned), keeping the rest; nullopt after the bound.
  // Const so that TicketStatus can ask: what it keeps is only events that
  // arrived meanwhile, for the next Poll.
  template <typename Wanted>
  std::optional<attach::AttachEvent> Await(Wanted wanted) const;
  // The LookupResult of request `id`, awaited; nullopt when it failed.
  std::optional<HostHit> AwaitHit(const Result<uint64_t>& id) const;

  std::unique_ptr<attach::AttachClient> client_;
  std::chrono::milliseconds answer_bound_;
  mutable std::deque<attach::AttachEvent> kept_;  // arrived while awaiting an answer
};

}  // namespace strata
