#include "wire/link/link_inbox.h"

#include <utility>

namespace strata::wire {

LinkInbox::LinkInbox(size_t messages_per_link_max)
    : messages_per_link_max_(messages_per_link_max) {}

LinkHandlers LinkInbox::HandlersFor(uint64_t tag) {
  LinkHandlers h;
  h.on_message = [this, tag](Message m) {
    LinkEvent e;
    e.kind = LinkEvent::Kind::kMessage;
    e.tag = tag;
    e.message = std::move(m);
    Push(std::move(e));
  };
  h.on_closed = [this, tag](const LinkState& state) {
    LinkEvent e;
    e.kind = LinkEvent::Kind::kClosed;
    e.tag = tag;
    e.state = state;
    Push(std::move(e));
  };
  h.on_drained = [this] {
    std::shared_ptr<WakeSignal> owner;
    {
      MutexLock lock(mu_);
      owner = signal_;
    }
    if (owner) owner->Notify();
  };
  return h;
}

void LinkInbox::Push(LinkEvent event) {
  std::shared_ptr<WakeSignal> owner;
  {
    MutexLock lock(mu_);
    owner = signal_;
    if (event.kind == LinkEvent::Kind::kMessage) {
      size_t& queued = queued_by_tag_[event.tag];
      if (queued >= messages_per_link_max_) {
        ++dropped_;
        if (!overflowed_.insert(event.tag).second) return;
        event.kind = LinkEvent::Kind::kOverflow;
        event.message = Message();
      } else {
        ++queued;
        if (owner && wakes_ && !wakes_(event)) owner = nullptr;
      }
    }
    events_.push_back(std::move(event));
  }
  ready_.NotifyOne();
  if (owner) owner->Notify();
}

void LinkInbox::Take(std::vector<LinkEvent>& out) {
  MutexLock lock(mu_);
  for (LinkEvent& e : events_) out.push_back(std::move(e));
  events_.clear();
  queued_by_tag_.clear();  // every queued message was just taken
}

bool LinkInbox::WaitUntil(std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(mu_);
  while (events_.empty() && !interrupted_ && ready_.WaitUntil(lock, deadline)) {
  }
  interrupted_ = false;
  return !events_.empty();
}

void LinkInbox::Interrupt() {
  std::shared_ptr<WakeSignal> owner;
  {
    MutexLock lock(mu_);
    interrupted_ = true;
    owner = signal_;
  }
  ready_.NotifyAll();
  if (owner) owner->Notify();
}

void LinkInbox::NotifyOnEvent(std::shared_ptr<WakeSignal> signal, WakeFilter wakes) {
  std::shared_ptr<WakeSignal> raise;  // set when events already wait
  {
    MutexLock lock(mu_);
    signal_ = std::move(signal);
    wakes_ = std::move(wakes);
    if (!events_.empty()) raise = signal_;
  }
  if (raise) raise->Notify();
}

uint64_t LinkInbox::overflowed() const {
  MutexLock lock(mu_);
  return dropped_;
}

}  // namespace strata::wire
