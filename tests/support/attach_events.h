// Shared by the tests whose runtimes attach to a strata rank: wait for the
// client's events without sleeping on a timer, count them by kind, and
// restore a looked-up prefix into a ticket.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <optional>
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

// The status of `lookup_ticket` (begun with BeginLookup) as strata answers
// it over `client`; other events that arrive meanwhile are dropped (call it
// with none outstanding). nullopt when no answer came within `bound`.
inline std::optional<LookupTicketStatus> AwaitTicketStatus(attach::AttachClient& client,
                                                           uint64_t lookup_ticket,
                                                           std::chrono::milliseconds bound) {
  const Result<uint64_t> sent = client.TicketStatus(lookup_ticket);
  if (!sent.ok()) return std::nullopt;
  std::vector<attach::AttachEvent> events;
  const auto answer = [&](const attach::AttachEvent& e) {
    const auto* r = std::get_if<attach::TicketStatusResult>(&e);
    return r != nullptr && r->request_id == *sent;
  };
  if (!WaitAttachEvents(client, events, bound, [&](const auto& got) {
        return std::any_of(got.begin(), got.end(), answer);
      })) {
    return std::nullopt;
  }
  return std::get<attach::TicketStatusResult>(*std::find_if(events.begin(), events.end(), answer))
      .status;
}

enum class AwaitRestore : unsigned char { kRequestOnly, kFetched };

// Looks `tokens` up over `client` (as the admission of `lookup_ticket`,
// begun earlier with BeginLookup, when it is nonzero) and asks for the
// hit's restore into `ticket` (one page id per page of the hit); with
// kFetched also waits for the outcome, which must be kFetched. A failure
// names the step.
inline ::testing::AssertionResult LookupAndRestore(attach::AttachClient& client,
                                                   const std::vector<Token>& tokens,
                                                   const InboundTicket& ticket,
                                                   std::chrono::milliseconds bound,
                                                   AwaitRestore await, uint64_t lookup_ticket = 0) {
  const Result<uint64_t> sent = lookup_ticket != 0
                                    ? client.LookupFor(lookup_ticket, tokens, 0, tokens.size())
                                    : client.Lookup(tokens, 0, tokens.size());
  if (!sent.ok()) {
    return ::testing::AssertionFailure() << "lookup not sent";
  }
  std::vector<attach::AttachEvent> events;
  if (!WaitAttachEvents(client, events, bound, [](const auto& e) { return !e.empty(); })) {
    return ::testing::AssertionFailure() << "no lookup result";
  }
  const auto* result = std::get_if<attach::LookupResult>(&events[0]);
  if (result == nullptr || !result->hit) return ::testing::AssertionFailure() << "not found";
  if (!client.Fetch(*result->hit, ticket).ok()) {
    return ::testing::AssertionFailure() << "fetch not sent";
  }
  if (await == AwaitRestore::kRequestOnly) return ::testing::AssertionSuccess();
  events.clear();
  auto ended = [](const auto& e) {
    return CountStoreEvents(e, StoreEvent::Kind::kFetched) +
               CountStoreEvents(e, StoreEvent::Kind::kFetchFailed) >
           0;
  };
  if (!WaitAttachEvents(client, events, bound, ended)) {
    return ::testing::AssertionFailure() << "no fetch event";
  }
  if (CountStoreEvents(events, StoreEvent::Kind::kFetched) != 1) {
    return ::testing::AssertionFailure() << "the fetch failed";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace strata::testing
