// StoreDispatch: turns one attached runtime's requests into HostStore calls
// and the store's events into messages for it, tracking which of its
// checkpoints and tickets still have copies in flight. Pure: no sockets, no
// clocks, no threads; the server (attach_server.h) does the I/O.
//
// Thread: the store's owner thread.
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "attach/client/attach_messages.h"
#include "store/tier/host_store.h"

namespace strata::attach {

class StoreDispatch {
 public:
  explicit StoreDispatch(HostStore& store) : store_(store) {}

  // Handles one request (Lookup, Fetch, Store) and appends the replies.
  // Anything else is refused with kInvalidArgument (the server detaches).
  // After StopIssuing, nothing reaches the store: Fetch answers
  // kFetchFailed, Store answers kDisabled.
  Status Handle(const AttachMessage& request, std::vector<AttachMessage>& replies);

  // Takes the store's events: forgets finished work and appends the events
  // for the runtime. kStopped is always forwarded.
  void OnEvents(const std::vector<StoreEvent>& events, std::vector<AttachMessage>& out);

  // The runtime detached or asked to close: no further copy is issued.
  void StopIssuing() { issuing_ = false; }
  // Copies into or out of the runtime's planes not yet reported finished.
  size_t in_flight() const { return checkpoints_.size() + tickets_.size(); }

 private:
  HostStore& store_;
  bool issuing_ = true;
  std::unordered_set<uint64_t> checkpoints_;  // kQueued, no kStored / kStoreFailed yet
  std::unordered_set<uint64_t> tickets_;      // fetch started, no kFetched / kFetchFailed yet
};

}  // namespace strata::attach
