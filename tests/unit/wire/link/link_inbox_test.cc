#include "wire/link/link_inbox.h"

#include <gtest/gtest.h>

#include <thread>

namespace strata::wire {
namespace {

using namespace std::chrono_literals;

TEST(LinkInboxTest, DeliversMessagesAndClosesInArrivalOrderWithTheirTags) {
  LinkInbox inbox(8);
  LinkHandlers a = inbox.HandlersFor(1);
  LinkHandlers b = inbox.HandlersFor(2);
  a.on_message(Heartbeat{1});
  b.on_message(Heartbeat{2});
  b.on_closed(LinkState{LinkPhase::kClosed, CloseCause::kPeerClosed, Status::Unavailable("gone")});
  std::vector<LinkEvent> got;
  inbox.Take(got);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].tag, 1u);
  EXPECT_EQ(std::get<Heartbeat>(got[0].message).sequence, 1u);
  EXPECT_EQ(got[1].tag, 2u);
  EXPECT_EQ(got[2].kind, LinkEvent::Kind::kClosed);
  EXPECT_EQ(got[2].state.cause, CloseCause::kPeerClosed);
  got.clear();
  inbox.Take(got);
  EXPECT_TRUE(got.empty());
}

TEST(LinkInboxTest, AFullInboxDropsTheMessageAndQueuesOneOverflowPerLink) {
  LinkInbox inbox(2);
  LinkHandlers a = inbox.HandlersFor(1);
  for (uint64_t i = 0; i < 5; ++i) a.on_message(Heartbeat{i});
  a.on_closed(LinkState{LinkPhase::kClosed, CloseCause::kLocalClose, Status::Ok()});
  std::vector<LinkEvent> got;
  inbox.Take(got);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].kind, LinkEvent::Kind::kMessage);
  EXPECT_EQ(got[1].kind, LinkEvent::Kind::kMessage);
  EXPECT_EQ(got[2].kind, LinkEvent::Kind::kOverflow);
  EXPECT_EQ(got[3].kind, LinkEvent::Kind::kClosed);  // closes always fit
  EXPECT_EQ(inbox.overflowed(), 3u);
  // Taking frees room again.
  a.on_message(Heartbeat{9});
  got.clear();
  inbox.Take(got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, LinkEvent::Kind::kMessage);
}

TEST(LinkInboxTest, AFloodingLinkDoesNotStarveAnotherLinksMessages) {
  LinkInbox inbox(4);  // per link
  LinkHandlers flood = inbox.HandlersFor(1);
  LinkHandlers peer = inbox.HandlersFor(2);
  for (uint64_t i = 0; i < 100; ++i) flood.on_message(Heartbeat{i});
  for (uint64_t i = 0; i < 4; ++i) peer.on_message(Heartbeat{1000 + i});
  std::vector<LinkEvent> got;
  inbox.Take(got);
  size_t peer_messages = 0, flood_messages = 0, overflows = 0;
  for (const LinkEvent& e : got) {
    if (e.kind == LinkEvent::Kind::kOverflow) {
      EXPECT_EQ(e.tag, 1u);
      ++overflows;
    } else if (e.kind == LinkEvent::Kind::kMessage) {
      ++(e.tag == 2 ? peer_messages : flood_messages);
    }
  }
  EXPECT_EQ(peer_messages, 4u);  // its whole quota, untouched by the flood
  EXPECT_EQ(flood_messages, 4u);
  EXPECT_EQ(overflows, 1u);
  EXPECT_EQ(inbox.overflowed(), 96u);
}

TEST(LinkInboxTest, WaitReturnsOnAnEventAnInterruptOrTheDeadline) {
  LinkInbox inbox;
  EXPECT_FALSE(inbox.WaitUntil(std::chrono::steady_clock::now()));
  inbox.Interrupt();
  EXPECT_FALSE(inbox.WaitUntil(std::chrono::steady_clock::now() + 30s));
  LinkHandlers h = inbox.HandlersFor(3);
  std::thread pusher([&] { h.on_message(Drain{}); });
  EXPECT_TRUE(inbox.WaitUntil(std::chrono::steady_clock::now() + 30s));
  pusher.join();
}

TEST(LinkInboxTest, AnAttachedSignalIsRaisedByMessagesClosesAndInterrupts) {
  LinkInbox inbox;
  auto signal = std::make_shared<WakeSignal>();
  inbox.NotifyOnEvent(signal);
  EXPECT_FALSE(signal->WaitUntil(std::chrono::steady_clock::now()));
  LinkHandlers h = inbox.HandlersFor(5);
  std::thread pusher([&] { h.on_message(Drain{}); });
  EXPECT_TRUE(signal->WaitUntil(std::chrono::steady_clock::now() + 30s));
  pusher.join();
  h.on_closed(LinkState{LinkPhase::kClosed, CloseCause::kPeerClosed, Status::Unavailable("gone")});
  EXPECT_TRUE(signal->WaitUntil(std::chrono::steady_clock::now()));
  inbox.Interrupt();
  EXPECT_TRUE(signal->WaitUntil(std::chrono::steady_clock::now()));
  std::vector<LinkEvent> got;
  inbox.Take(got);
  ASSERT_EQ(got.size(), 2u);  // the signal carries nothing; the events stay in the inbox
}

TEST(LinkInboxTest, ALinkThatDrainedRaisesTheSignalWithoutAnEvent) {
  LinkInbox inbox;
  LinkHandlers h = inbox.HandlersFor(3);
  h.on_drained();  // no signal attached: nothing to raise, nothing queued
  auto signal = std::make_shared<WakeSignal>();
  inbox.NotifyOnEvent(signal);
  EXPECT_FALSE(signal->WaitUntil(std::chrono::steady_clock::now()));
  h.on_drained();
  EXPECT_TRUE(signal->WaitUntil(std::chrono::steady_clock::now()));
  std::vector<LinkEvent> got;
  inbox.Take(got);
  EXPECT_TRUE(got.empty());
}

TEST(LinkInboxTest, ASignalAttachedWhileEventsWaitIsRaisedAtOnce) {
  LinkInbox inbox;
  inbox.HandlersFor(1).on_message(Heartbeat{1});
  auto signal = std::make_shared<WakeSignal>();
  inbox.NotifyOnEvent(signal);
  EXPECT_TRUE(signal->WaitUntil(std::chrono::steady_clock::now()));
  inbox.NotifyOnEvent(nullptr);  // detached: later events raise nothing
  inbox.HandlersFor(1).on_message(Heartbeat{2});
  EXPECT_FALSE(signal->WaitUntil(std::chrono::steady_clock::now()));
}

TEST(LinkInboxTest, AMessageTheFilterHoldsIsQueuedWithoutRaisingTheSignal) {
  LinkInbox inbox;
  auto signal = std::make_shared<WakeSignal>();
  // Heartbeats are held; everything else wakes.
  inbox.NotifyOnEvent(
      signal, [](const LinkEvent& e) { return !std::holds_alternative<Heartbeat>(e.message); });
  LinkHandlers h = inbox.HandlersFor(3);
  h.on_message(Heartbeat{1});
  EXPECT_FALSE(signal->WaitUntil(std::chrono::steady_clock::now()));
  EXPECT_EQ(signal->notifications(), 0u);
  h.on_message(Drain{});
  EXPECT_TRUE(signal->WaitUntil(std::chrono::steady_clock::now()));
  std::vector<LinkEvent> got;
  inbox.Take(got);
  ASSERT_EQ(got.size(), 2u);  // held, not lost, and in arrival order
  EXPECT_TRUE(std::holds_alternative<Heartbeat>(got[0].message));
  EXPECT_TRUE(std::holds_alternative<Drain>(got[1].message));
}

TEST(LinkInboxTest, ClosesAndInterruptsWakeWhateverTheFilterSays) {
  LinkInbox inbox;
  auto signal = std::make_shared<WakeSignal>();
  int asked = 0;
  inbox.NotifyOnEvent(signal, [&asked](const LinkEvent&) {
    ++asked;
    return false;
  });
  LinkHandlers h = inbox.HandlersFor(3);
  h.on_closed(LinkState{LinkPhase::kClosed, CloseCause::kPeerClosed, Status::Unavailable("gone")});
  EXPECT_TRUE(signal->WaitUntil(std::chrono::steady_clock::now()));
  inbox.Interrupt();
  EXPECT_TRUE(signal->WaitUntil(std::chrono::steady_clock::now()));
  EXPECT_EQ(asked, 0);  // only messages are filtered
  // WaitUntil, the inbox's own wait, is not filtered.
  h.on_message(Heartbeat{1});
  EXPECT_TRUE(inbox.WaitUntil(std::chrono::steady_clock::now()));
  EXPECT_EQ(asked, 1);
}

}  // namespace
}  // namespace strata::wire
