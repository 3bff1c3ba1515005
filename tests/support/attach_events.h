// Shared by the tests whose runtimes attach to a strata rank: wait for the
// client's events without sleeping on a timer, and count them by kind.
#pragma once

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "attach/client/attach_client.h"

namespace strata::testing {

// Polls `client` until `done(events)` holds for the events so far (appended
// to `events`), or `bound` passes, or the client is gone. True when `done` held.
template <typename Done>
bool WaitAttachEvents(attach::AttachClient& client, std::vector<attach::AttachEvent>& events,
                      std::chrono::milliseconds bound, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!done(events)) {
    if (!client.Poll(events).ok() || std::chrono::steady_clock::now() > deadline) return false;
    pollfd p{client.fd(), POLLIN, 0};
    (void)::poll(&p, 1, 100);
  }
  return true;
}

// The store events of `kind` among `events`.
inline size_t CountStoreEvents(const std::vector<attach::AttachEvent>& events,
                               StoreEvent::Kind kind) {
  return static_cast<size_t>(std::count_if(events.begin(), events.end(), [&](const auto& e) {
    const auto* s = std::get_if<StoreEvent>(&e);
    return s != nullptr && s->kind == kind;
  }));
}

}  // namespace strata::testing
