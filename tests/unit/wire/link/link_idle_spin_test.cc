// Idle spin on a link's I/O thread (LinkOptions::idle_spin), over real
// sockets: a frame that comes while the thread polls is read without the
// thread sleeping (LinkStats::idle_spin_hits), a close ends a long spin at
// once, and a link with no budget never spins. Every wait is on the event,
// with a bound; nothing depends on the machine's speed.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "store/base/idle_spin.h"
#include "tests/unit/wire/wire_test_util.h"
#include "wire/link/link.h"
#include "wire/listener.h"

namespace strata::wire {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::LoopbackListener;
using testing::QuietLinkOptions;
using testing::QuietListening;
using testing::Recorder;

// A dialed quiet link and the accepted one, whose I/O thread spins for
// `acceptor_spin` when idle.
struct SpinPair {
  explicit SpinPair(std::chrono::microseconds acceptor_spin)
      : listener([&] {
          ListenerOptions o = QuietListening();
          o.link_options.idle_spin = acceptor_spin;
          return o;
        }()) {
    auto d = Dial(listener.endpoint(), QuietLinkOptions());
    if (!d.ok()) return;
    dialer = std::move(*d);
    dialer->Start(dialer_events.Handlers());
    acceptor = listener.NextLink();
    if (acceptor) acceptor->Start(acceptor_events.Handlers());
  }
  ~SpinPair() {
    acceptor.reset();
    dialer.reset();
  }

  LoopbackListener listener;
  Recorder dialer_events;
  Recorder acceptor_events;
  std::unique_ptr<Link> dialer;
  std::unique_ptr<Link> acceptor;
};

// The acceptor's stats once `done` holds of them, within 10 s: a spin's
// counts are recorded just after the work it found ran, so a test that saw
// the work may read them a moment early.
template <typename Done>
LinkStats StatsOnce(const Link& link, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  LinkStats s = link.stats();
  while (!done(s) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
    s = link.stats();
  }
  return s;
}

TEST(LinkIdleSpinTest, AFrameThatComesWhileTheThreadSpinsIsReadWithoutASleep) {
  const ScopedSpinSlots slots(1);  // this test's one spinner always finds a slot
  SpinPair pair(seconds(5));
  ASSERT_NE(pair.acceptor, nullptr);
  ASSERT_TRUE(pair.dialer->Send(Heartbeat{1}).ok());
  ASSERT_TRUE(pair.acceptor_events.messages.Pop().has_value());
  // The acceptor's thread, idle since that frame, polls for up to 5 s; what
  // it counted so far (its start, the first frame) is the baseline.
  std::this_thread::sleep_for(milliseconds(20));
  const LinkStats before = pair.acceptor->stats();
  std::this_thread::sleep_for(milliseconds(20));
  ASSERT_TRUE(pair.dialer->Send(Heartbeat{2}).ok());
  std::optional<Message> second = pair.acceptor_events.messages.Pop();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(std::get<Heartbeat>(*second).sequence, 2u);
  const LinkStats after = StatsOnce(
      *pair.acceptor, [&](const LinkStats& s) { return s.idle_spin_hits > before.idle_spin_hits; });
  EXPECT_GT(after.idle_spin_hits, before.idle_spin_hits) << "the second frame was not caught";
  EXPECT_GE(after.idle_spin_ns - before.idle_spin_ns, uint64_t{10'000'000})
      << "it polled through the 20 ms pause";
  // The dialer has no budget: it sleeps at once.
  EXPECT_EQ(pair.dialer->stats().idle_spin_hits, 0u);
}

TEST(LinkIdleSpinTest, ClosingEndsALongSpinAtOnce) {
  const ScopedSpinSlots slots(1);
  SpinPair pair(seconds(60));
  ASSERT_NE(pair.acceptor, nullptr);
  ASSERT_TRUE(pair.dialer->Send(Heartbeat{1}).ok());
  ASSERT_TRUE(pair.acceptor_events.messages.Pop().has_value());
  std::this_thread::sleep_for(milliseconds(10));  // into its 60 s spin
  const auto began = std::chrono::steady_clock::now();
  pair.acceptor->Close();  // joins the I/O thread
  EXPECT_LT(std::chrono::steady_clock::now() - began, seconds(30))
      << "Close waited for the spin's budget";
  std::optional<LinkState> closed = pair.dialer_events.closed.Pop();
  ASSERT_TRUE(closed.has_value());
  EXPECT_EQ(closed->cause, CloseCause::kPeerClosed);
}

TEST(LinkIdleSpinTest, ALinkWithNoBudgetNeverSpins) {
  SpinPair pair(std::chrono::microseconds(0));
  ASSERT_NE(pair.acceptor, nullptr);
  for (uint64_t i = 1; i <= 3; ++i) {
    ASSERT_TRUE(pair.dialer->Send(Heartbeat{i}).ok());
    ASSERT_TRUE(pair.acceptor_events.messages.Pop().has_value());
  }
  const LinkStats s = pair.acceptor->stats();
  EXPECT_EQ(s.idle_spin_hits, 0u);
  EXPECT_EQ(s.idle_spin_ns, 0u);
}

}  // namespace
}  // namespace strata::wire
