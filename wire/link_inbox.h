// LinkInbox: carries what one or more links deliver (messages, closes) from
// their I/O threads to the one thread that owns them, in arrival order. The
// owner drains it with Take() and sleeps on WaitUntil(); link threads never
// wait on the owner.
//
// Bounded: at most `messages_max` messages are queued at once. A message
// that finds the inbox full is dropped and a single kOverflow event for its
// link is queued instead (closes always queue): the owner treats that link
// as failed (a peer that floods us), it never silently loses a message.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "store/base/wake_signal.h"
#include "wire/link.h"
#include "wire/messages.h"

namespace strata::wire {

struct LinkEvent {
  enum class Kind : uint8_t {
    kMessage,   // `message` arrived on the link
    kClosed,    // the link closed; `state` says why (its last event)
    kOverflow,  // a message was dropped because the inbox was full
  };
  Kind kind = Kind::kMessage;
  uint64_t tag = 0;  // the owner's name for the link (HandlersFor)
  Message message;
  LinkState state;
};

class LinkInbox {
 public:
  static constexpr size_t kDefaultMessagesMax = 65536;

  explicit LinkInbox(size_t messages_max = kDefaultMessagesMax);
  LinkInbox(const LinkInbox&) = delete;
  LinkInbox& operator=(const LinkInbox&) = delete;

  // Handlers that queue the link's messages and its close under `tag`. The
  // inbox must outlive the link's I/O thread (keep it in a shared_ptr the
  // handlers do not own, and destroy links first).
  LinkHandlers HandlersFor(uint64_t tag);

  // Appends every queued event to `out`, oldest first.
  void Take(std::vector<LinkEvent>& out);
  // Waits until an event is queued, Interrupt() is called, or `deadline`.
  // True when events are queued. An interrupt wakes one wait and is then
  // forgotten.
  bool WaitUntil(std::chrono::steady_clock::time_point deadline);
  void Interrupt();
  // From now on every queued event and every Interrupt() also notifies
  // `signal` (an owner that waits on the inbox and on other sources at
  // once); null stops that. Notifies at once when events are queued.
  void NotifyOnEvent(std::shared_ptr<WakeSignal> signal);

  // Messages dropped because the inbox was full, over its life.
  uint64_t overflowed() const;

 private:
  void Push(LinkEvent event);

  const size_t messages_max_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::deque<LinkEvent> events_;        // guarded by mu_
  size_t messages_queued_ = 0;          // guarded by mu_
  std::set<uint64_t> overflowed_;       // guarded by mu_: tags with a kOverflow queued once
  uint64_t dropped_ = 0;                // guarded by mu_
  bool interrupted_ = false;            // guarded by mu_
  std::shared_ptr<WakeSignal> signal_;  // guarded by mu_
};

}  // namespace strata::wire
