// StoreDispatch: turns one attached runtime's requests into HostStore calls
// and the store's events into messages for it, tracking which of its
// checkpoints and tickets still await their event. Pure: no sockets, no
// clocks, no threads; the server (attach_server.h) does the I/O.
//
// A store that reports kStopped reports no job from then on (a sharded
// store whose peer was lost, store/tier/host_store.h): the jobs still
// awaiting an event at that moment are abandoned, not in flight, and no
// further request reaches the store.
//
// Thread: the store's owner thread.
#pragma once

#include <cstdint>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "attach/client/attach_messages.h"
#include "store/tier/host_store.h"

namespace strata::attach {

// Lookup tickets one attached runtime may hold open (the store's own bound).
inline constexpr size_t kAttachTicketsMax = 256;

// Jobs the store will never report: awaiting their event when it stopped.
struct AbandonedJobs {
  std::set<uint64_t> checkpoints;  // Store requests answered kQueued
  std::set<uint64_t> tickets;      // Fetch requests started
  bool empty() const { return checkpoints.empty() && tickets.empty(); }
  size_t size() const { return checkpoints.size() + tickets.size(); }
};

class StoreDispatch {
 public:
  explicit StoreDispatch(HostStore& store) : store_(store) {}
  // Ends the lookup tickets the runtime left open.
  ~StoreDispatch();
  StoreDispatch(const StoreDispatch&) = delete;
  StoreDispatch& operator=(const StoreDispatch&) = delete;

  // Handles one request (Lookup in any step, EndLookup, Fetch, Store,
  // Evicted, EvictionsLost, ExportPinnedReply, ExportRefusedReply) and
  // appends the replies (eviction notices and export answers have none:
  // they go to HostStore::Evicted / EvictionsLost / ExportPinned /
  // ExportRefused; after StopIssuing a pin is passed on as a refusal). A begun lookup opens the
  // store's ticket (HostStore::BeginLookup) under the request's id, at most kAttachTicketsMax at
  // once (beyond, none: its admission is a one-step Lookup); an admission of an unknown ticket is a
  // one-step Lookup too. A begin whose id is open already is refused. Anything else is refused with
  // kInvalidArgument (the server detaches). After StopIssuing or the store's kStopped, no copy
  // reaches the store: Fetch answers kFetchFailed, Store answers kDisabled (lookups and eviction
  // notices still do).
  Status Handle(const AttachMessage& request, std::vector<AttachMessage>& replies);

  // Takes the store's events: forgets finished work and appends the events
  // for the runtime. kStopped is always forwarded, and abandons every job
  // still awaiting its event. kExportRequested goes to the runtime, which
  // answers with ExportPinnedReply or ExportRefusedReply (after StopIssuing
  // it is refused here, kNotFound); kExportEnded goes to it too.
  void OnEvents(const std::vector<StoreEvent>& events, std::vector<AttachMessage>& out);

  // The runtime detached or asked to close: no further copy is issued.
  void StopIssuing() { issuing_ = false; }
  // Jobs the store will still report (accepted, no event yet); 0 once stopped.
  size_t in_flight() const { return checkpoints_.size() + tickets_.size(); }
  // Jobs the store will never report (empty unless it stopped).
  const AbandonedJobs& abandoned() const { return abandoned_; }
  // The store reported kStopped; its status says why (OK before).
  bool store_stopped() const { return !stop_reason_.ok(); }

  // CloseDone's status once the runtime's planes are released: OK, or
  // kAborted naming the abandoned jobs and why the store stopped.
  Status DetachStatus() const;

 private:
  Status HandleLookup(const LookupRequest& lookup, std::vector<AttachMessage>& replies);
  // The Fetch / Store refusal while nothing may reach the store.
  Status NotIssuingReason() const;

  HostStore& store_;
  // Tickets the runtime began, by the begin's request id.
  std::unordered_map<uint64_t, LookupTicket> tickets_begun_;
  bool issuing_ = true;
  Status stop_reason_;                        // the kStopped event's status
  std::unordered_set<uint64_t> checkpoints_;  // kQueued, no kStored / kStoreFailed yet
  std::unordered_set<uint64_t> tickets_;      // fetch started, no kFetched / kFetchFailed yet
  AbandonedJobs abandoned_;
};

}  // namespace strata::attach
