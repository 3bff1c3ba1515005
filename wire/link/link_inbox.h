// LinkInbox: carries what one or more links deliver (messages, closes) from
// their I/O threads to the one thread that owns them, in arrival order. The
// owner drains it with Take() and sleeps on WaitUntil(); link threads never
// wait on the owner.
//
// Bounded per link: at most `messages_per_link_max` messages of one link
// (one tag) are queued at once, so one link's flood never costs another
// link a message. A message that finds its link's quota full is dropped and
// a single kOverflow event for that link is queued instead (closes always
// queue): the owner treats that link as failed (a peer that floods us), it
// never silently loses a message.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "store/base/mutex.h"
#include "store/base/wake_signal.h"
#include "wire/link/link.h"
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
  // The default quota of each link.
  static constexpr size_t kDefaultMessagesMax = 65536;

  explicit LinkInbox(size_t messages_per_link_max = kDefaultMessagesMax);
  LinkInbox(const LinkInbox&) = delete;
  LinkInbox& operator=(const LinkInbox&) = delete;

  // Handlers that queue the link's messages and its close under `tag`, and
  // raise the NotifyOnEvent signal (no event) when its send queue drained
  // after Link::NotifyWhenDrained, for an owner pacing bulk sends. The
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
  // Whether a message just queued must wake the owner now. Runs on the
  // pushing link's I/O thread under the inbox's lock: it must be short and
  // must not call the inbox.
  using WakeFilter = std::function<bool(const LinkEvent&)>;

  // From now on every queued event and every Interrupt() also notifies
  // `signal` (an owner that waits on the inbox and on other sources at
  // once); null stops that. Notifies at once when events are queued.
  // With `wakes`, a message for which it returns false is queued without
  // notifying `signal`: the owner takes it with the next event that does
  // notify, or at its next poll (its wait's bound). Closes, overflows and
  // interrupts always notify. WaitUntil is not filtered.
  void NotifyOnEvent(std::shared_ptr<WakeSignal> signal, WakeFilter wakes = nullptr);

  // Messages dropped because the inbox was full, over its life.
  uint64_t overflowed() const;

 private:
  void Push(LinkEvent event);

  const size_t messages_per_link_max_;
  mutable Mutex mu_;
  CondVar ready_;
  std::deque<LinkEvent> events_ GUARDED_BY(mu_);
  std::map<uint64_t, size_t> queued_by_tag_ GUARDED_BY(mu_);  // messages queued, > 0
  std::set<uint64_t> overflowed_ GUARDED_BY(mu_);             // tags with a kOverflow queued once
  uint64_t dropped_ GUARDED_BY(mu_) = 0;
  bool interrupted_ GUARDED_BY(mu_) = false;
  std::shared_ptr<WakeSignal> signal_ GUARDED_BY(mu_);
  WakeFilter wakes_ GUARDED_BY(mu_);
};

}  // namespace strata::wire
