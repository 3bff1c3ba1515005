// Liveness over real sockets: an idle link sends heartbeats, and a peer that
// goes silent without closing (it neither reads nor writes, as a stopped
// process) is closed as kPeerSilent. Short configured bounds; every wait is
// on the event, with a bound.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/wire/link/raw_peer.h"
#include "tests/unit/wire/wire_test_util.h"
#include "wire/link/link.h"
#include "wire/listener.h"

namespace strata::wire {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using testing::LoopbackListener;
using testing::RawPeer;
using testing::Recorder;

TEST(LinkSilenceTest, AnIdleLinkSendsNumberedHeartbeats) {
  LoopbackListener listener;  // the accepting side stays quiet
  LinkOptions o;
  o.liveness = {.heartbeat_interval = milliseconds(10), .silence_timeout = milliseconds(0)};
  auto dialed = Dial(listener.endpoint(), o);
  ASSERT_TRUE(dialed.ok());
  Recorder dialer_events;
  (*dialed)->Start(dialer_events.Handlers());
  std::unique_ptr<Link> acceptor = listener.NextLink();
  ASSERT_NE(acceptor, nullptr);
  Recorder acceptor_events;
  acceptor->Start(acceptor_events.Handlers());
  // Three received: the sender counted the second before it sent the third
  // (its count may trail the frame it describes, never the next one).
  for (uint64_t sequence = 1; sequence <= 3; ++sequence) {
    std::optional<Message> m = acceptor_events.messages.Pop();
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(std::get<Heartbeat>(*m).sequence, sequence);
  }
  EXPECT_GE((*dialed)->stats().heartbeats_out, 2u);
  EXPECT_EQ(acceptor->stats().heartbeats_out, 0u);  // quiet: heartbeats off
  acceptor.reset();
  dialed->reset();
}

TEST(LinkSilenceTest, APeerThatStopsReadingAndWritingIsClosedAsSilent) {
  ListenerOptions options = testing::QuietListening();
  options.link_options.liveness = {.heartbeat_interval = milliseconds(10),
                                   .silence_timeout = milliseconds(100)};
  LoopbackListener listener(options);
  RawPeer peer(listener);  // never writes, reads nothing until the end
  const LinkState state = peer.WaitClosed();
  EXPECT_EQ(state.cause, CloseCause::kPeerSilent);
  EXPECT_THAT(state.reason.message(), HasSubstr("silence timeout 100 ms"));
  EXPECT_EQ(peer.link().stats().bytes_in, 0u);
  size_t heard = 0;
  EXPECT_TRUE(peer.SeesConnectionEnd(&heard));
  EXPECT_GT(heard, 0u);  // the link heartbeated while it waited
  EXPECT_EQ(heard, peer.link().stats().bytes_out);
}

}  // namespace
}  // namespace strata::wire
