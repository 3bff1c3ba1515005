// Shared by the tests whose runtimes publish and restore synthetic
// conversations over the attach channel: where a conversation's units sit in
// a runtime's planes, filling and checking them, its tokens, the checkpoint
// that publishes it and the ticket that restores it.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "attach/client/attach_client.h"
#include "store/base/prefix_history.h"
#include "tests/support/attach_events.h"

namespace strata::testing {

// One conversation's units in a runtime's planes: `pages` page ids from
// `first_page`, and the state row `row`.
struct ConversationUnits {
  uint32_t first_page = 0;
  uint64_t pages = 0;
  uint32_t row = 0;
};

// Conversation c of those laid out `pages` apart from `first_page`, with
// state row `row`.
inline ConversationUnits NthConversationUnits(uint64_t c, uint64_t pages, uint32_t first_page,
                                              uint32_t row) {
  return {.first_page = static_cast<uint32_t>(first_page + c * pages), .pages = pages, .row = row};
}

// The byte a conversation's unit holds at `offset`: allocation `a`, `unit`
// its page within the conversation (0 for the row).
using UnitByte = std::function<uint8_t(size_t a, uint64_t unit, uint64_t offset)>;

// Calls `visit(a, unit, bytes)` on every unit of `at` in every allocation.
template <typename Planes, typename Visit>
void ForEachConversationUnit(Planes& planes, const ConversationUnits& at, Visit visit) {
  for (size_t a = 0; a < planes.allocations.size(); ++a) {
    const bool row = planes.allocations[a].group == AllocationGroup::kStateRows;
    for (uint64_t i = 0; i < (row ? 1 : at.pages); ++i) {
      visit(a, i, planes.Unit(a, row ? at.row : static_cast<uint32_t>(at.first_page + i)));
    }
  }
}

// Planes: attach::testing::RuntimePlanes or alike (allocations, Unit(a, id)).
template <typename Planes>
void FillConversation(Planes& planes, const ConversationUnits& at, const UnitByte& byte) {
  ForEachConversationUnit(planes, at, [&](size_t a, uint64_t i, uint8_t* unit) {
    for (uint64_t o = 0; o < planes.allocations[a].unit_bytes; ++o) unit[o] = byte(a, i, o);
  });
}

// Bytes of the units of `at` that differ from `byte`.
template <typename Planes>
uint64_t ConversationMismatches(const Planes& planes, const ConversationUnits& at,
                                const UnitByte& byte) {
  uint64_t n = 0;
  ForEachConversationUnit(planes, at, [&](size_t a, uint64_t i, const uint8_t* unit) {
    for (uint64_t o = 0; o < planes.allocations[a].unit_bytes; ++o) {
      n += unit[o] != byte(a, i, o) ? 1 : 0;
    }
  });
  return n;
}

// `count` tokens from `first` on: a conversation of its own.
inline std::vector<Token> ConversationTokens(uint64_t first, uint64_t count) {
  std::vector<Token> t(count);
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<Token>(first + i);
  return t;
}

// Publishes `tokens` from the units of `at` (every page is a tail page).
inline PublishedCheckpoint ConversationCheckpoint(const std::vector<Token>& tokens,
                                                  uint64_t checkpoint_id,
                                                  const ConversationUnits& at) {
  const PrefixHistory history(tokens);
  PublishedCheckpoint cp;
  cp.checkpoint_id = checkpoint_id;
  cp.key = history.key_at(tokens.size());
  cp.bucket = history.bucket_digest(tokens.size());
  for (uint64_t p = 0; p < at.pages; ++p) cp.chain.emplace_back(at.first_page + p);
  cp.tail_pages = at.pages;
  cp.row_slot = StateSlot(at.row);
  return cp;
}

// A restore into the units of `into`.
inline InboundTicket ConversationTicket(JobId ticket_id, const ConversationUnits& into) {
  InboundTicket ticket;
  ticket.ticket = ticket_id;
  ticket.row_slot = StateSlot(into.row);
  for (uint64_t p = 0; p < into.pages; ++p) ticket.page_ids.emplace_back(into.first_page + p);
  return ticket;
}

// Stores `checkpoint` over `client` and waits up to `bound` for its outcome,
// which must be kStored.
inline ::testing::AssertionResult StoreAndAwait(attach::AttachClient& client,
                                                const PublishedCheckpoint& checkpoint,
                                                std::chrono::milliseconds bound) {
  if (!client.Store(checkpoint).ok()) return ::testing::AssertionFailure() << "store not sent";
  std::vector<attach::AttachEvent> events;
  const bool ended = WaitAttachEvents(client, events, bound, [](const auto& e) {
    return CountStoreEvents(e, StoreEvent::Kind::kStored) +
               CountStoreEvents(e, StoreEvent::Kind::kStoreFailed) >
           0;
  });
  if (!ended) return ::testing::AssertionFailure() << "no store event";
  if (CountStoreEvents(events, StoreEvent::Kind::kStored) != 1) {
    return ::testing::AssertionFailure()
           << "checkpoint " << checkpoint.checkpoint_id << " was not stored";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace strata::testing
