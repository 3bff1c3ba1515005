// Links over loopback: messages both ways, in order; queued bytes and their
// drain; addresses; clean close from either side; connect failures; the
// listener's bound on links.
#include "wire/link/link.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "tests/unit/wire/wire_test_util.h"
#include "wire/listener.h"

namespace strata::wire {
namespace {

using testing::EventQueue;
using ::testing::HasSubstr;
using testing::LoopbackListener;
using testing::Recorder;

// A dialed and an accepted link, both started, each with its recorder.
struct Pair {
  Recorder dialer_events;
  Recorder acceptor_events;
  std::unique_ptr<Link> dialer;
  std::unique_ptr<Link> acceptor;

  ~Pair() {
    // Links go before the recorders their handlers write to.
    dialer.reset();
    acceptor.reset();
  }
};

// With AcceptorReads::kNo the accepted link is not started: it reads
// nothing until the test starts it.
enum class AcceptorReads : bool { kNo, kYes };
void Connect(LoopbackListener& listener, Pair& pair,
             LinkOptions options = testing::QuietLinkOptions(),
             AcceptorReads reads = AcceptorReads::kYes) {
  options.name = "dialer";
  auto dialed = Dial(listener.endpoint(), options);
  ASSERT_TRUE(dialed.ok()) << dialed.status().ToString();
  pair.dialer = std::move(*dialed);
  pair.dialer->Start(pair.dialer_events.Handlers());
  pair.acceptor = listener.NextLink();
  ASSERT_NE(pair.acceptor, nullptr) << "no connection accepted";
  ASSERT_TRUE(pair.dialer_events.opened.Pop().has_value());
  if (reads == AcceptorReads::kNo) return;
  pair.acceptor->Start(pair.acceptor_events.Handlers());
  ASSERT_TRUE(pair.acceptor_events.opened.Pop().has_value());
}

TEST(WireLink, DeliversEveryMessageTypeBothWays) {
  LoopbackListener listener;
  Pair pair;
  Connect(listener, pair);
  const std::vector<Message> messages = testing::SampleMessages();
  for (const Message& m : messages) {
    ASSERT_TRUE(pair.dialer->Send(m).ok());
    ASSERT_TRUE(pair.acceptor->Send(m).ok());
  }
  for (Recorder* events : {&pair.acceptor_events, &pair.dialer_events}) {
    for (const Message& expected : messages) {
      std::optional<Message> got = events->messages.Pop();
      ASSERT_TRUE(got.has_value()) << "missing " << MessageName(expected);
      EXPECT_TRUE(*got == expected) << MessageName(expected);
    }
  }
}

TEST(WireLink, ManyFramesArriveInOrderBothWays) {
  constexpr uint64_t kFrames = 3000;
  ListenerOptions options = testing::QuietListening();
  options.link_options.send_queue_frames_max = kFrames;
  LoopbackListener listener(options);
  Pair pair;
  Connect(listener, pair, options.link_options);
  std::thread other_side([&] {
    for (uint64_t i = 0; i < kFrames; ++i) {
      EXPECT_TRUE(pair.acceptor->Send(Heartbeat{i}).ok());
    }
  });
  for (uint64_t i = 0; i < kFrames; ++i) {
    ASSERT_TRUE(pair.dialer->Send(i % 10 ? Message(Heartbeat{i}) : testing::SampleJob()).ok());
  }
  other_side.join();
  for (uint64_t i = 0; i < kFrames; ++i) {
    std::optional<Message> got = pair.dialer_events.messages.Pop();
    ASSERT_TRUE(got.has_value()) << "frame " << i << " never arrived";
    ASSERT_EQ(std::get<Heartbeat>(*got).sequence, i);
  }
  for (uint64_t i = 0; i < kFrames; ++i) {
    std::optional<Message> got = pair.acceptor_events.messages.Pop();
    ASSERT_TRUE(got.has_value()) << "frame " << i << " never arrived";
    if (i % 10) {
      ASSERT_EQ(std::get<Heartbeat>(*got).sequence, i);
    } else {
      ASSERT_TRUE(std::holds_alternative<Job>(*got));
    }
  }
  const LinkStats sent = pair.dialer->stats();
  const LinkStats received = pair.acceptor->stats();
  EXPECT_EQ(sent.frames_out, kFrames);
  EXPECT_EQ(received.frames_in, kFrames);
  EXPECT_EQ(sent.bytes_out, received.bytes_in);
  EXPECT_EQ(sent.send_queue_full, 0u);
}

TEST(WireLink, ASendOnAnIdleOpenLinkIsWrittenBySendItself) {
  LoopbackListener listener;
  Pair pair;
  Connect(listener, pair);
  // Open, nothing queued, an empty socket buffer: Send hands the frame to the
  // kernel itself instead of waking the I/O thread.
  ASSERT_TRUE(pair.dialer->Send(Heartbeat{7}).ok());
  const LinkStats sent = pair.dialer->stats();
  EXPECT_EQ(sent.frames_out_direct, 1u);
  EXPECT_EQ(sent.frames_out, 1u);
  std::optional<Message> got = pair.acceptor_events.messages.Pop();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(std::get<Heartbeat>(*got).sequence, 7u);
  EXPECT_EQ(pair.acceptor->stats().bytes_in, sent.bytes_out);
}

TEST(WireLink, FramesTheSocketTakesOnlyInPartArriveWholeAndInOrder) {
  LoopbackListener listener;
  Pair pair;
  Connect(listener, pair, testing::QuietLinkOptions(), AcceptorReads::kNo);
  Link* dialer = pair.dialer.get();
  Link* acceptor = pair.acceptor.get();
  Recorder& acceptor_events = pair.acceptor_events;
  // 4 MiB frames to a peer that does not read: socket buffers take the first
  // bytes, so some frame is written in part by Send and finished by the I/O
  // thread, with later frames queued behind it.
  constexpr uint64_t kBigFrames = 6;  // 24 MiB: beyond any loopback socket buffers
  std::vector<Job> big;
  for (uint64_t i = 0; i < kBigFrames; ++i) {
    Job job = testing::SampleJob();
    job.record.id = JobId(i);
    job.record.page_ids.assign(kJobPageIdsMax - 2, PageId(static_cast<uint32_t>(i)));
    job.record.tail_pages = job.record.first_page + static_cast<uint32_t>(kJobPageIdsMax - 2);
    const Status sent = dialer->Send(job);
    ASSERT_TRUE(sent.ok()) << sent.ToString();
    ASSERT_TRUE(dialer->Send(Heartbeat{i}).ok());
    big.push_back(std::move(job));
  }
  EXPECT_LT(dialer->stats().frames_out_direct, 2 * kBigFrames) << "nothing was queued";
  acceptor->Start(acceptor_events.Handlers());
  for (uint64_t i = 0; i < kBigFrames; ++i) {
    std::optional<Message> job = acceptor_events.messages.Pop();
    ASSERT_TRUE(job.has_value()) << "big frame " << i << " never arrived";
    ASSERT_TRUE(std::holds_alternative<Job>(*job));
    EXPECT_TRUE(std::get<Job>(*job) == big[i]) << "big frame " << i << " differs";
    std::optional<Message> beat = acceptor_events.messages.Pop();
    ASSERT_TRUE(beat.has_value());
    ASSERT_TRUE(std::holds_alternative<Heartbeat>(*beat));
    EXPECT_EQ(std::get<Heartbeat>(*beat).sequence, i);
  }
  EXPECT_EQ(acceptor->stats().frames_in, 2 * kBigFrames);
}

TEST(WireLink, QueuedBytesAreReportedAndTheirDrainIsSignalled) {
  LoopbackListener listener;
  Pair pair;
  Connect(listener, pair, testing::QuietLinkOptions(), AcceptorReads::kNo);
  Link* dialer = pair.dialer.get();
  Link* acceptor = pair.acceptor.get();
  Recorder& dialer_events = pair.dialer_events;
  Recorder& acceptor_events = pair.acceptor_events;
  EXPECT_EQ(dialer->queued_bytes(), 0u);
  dialer->NotifyWhenDrained();  // nothing queued: at once
  EXPECT_TRUE(dialer_events.drained.Pop().has_value());
  constexpr uint64_t kChunks = 6;  // 24 MiB: beyond any loopback socket buffers
  // One job's kChunks chunks of 4 MiB, sent to the peer.
  const auto send_chunks = [&](uint64_t job) {
    for (uint64_t i = 0; i < kChunks; ++i) {
      JobData chunk{.id = JobId(job),
                    .offset = i * kJobDataChunkBytesMax,
                    .total = kChunks * kJobDataChunkBytesMax,
                    .data = std::vector<std::byte>(kJobDataChunkBytesMax, std::byte{7})};
      ASSERT_TRUE(dialer->Send(chunk).ok()) << "chunk " << i << " of job " << job;
    }
  };
  send_chunks(1);
  EXPECT_GT(dialer->queued_bytes(), kJobDataChunkBytesMax) << "the socket took everything";
  dialer->NotifyWhenDrained();
  EXPECT_FALSE(dialer_events.drained.Pop(std::chrono::milliseconds(50)).has_value())
      << "drained while the peer reads nothing";
  acceptor->Start(acceptor_events.Handlers());
  for (uint64_t i = 0; i < kChunks; ++i) {
    std::optional<Message> m = acceptor_events.messages.Pop();
    ASSERT_TRUE(m.has_value()) << "chunk " << i << " never arrived";
    ASSERT_TRUE(std::holds_alternative<JobData>(*m));
    EXPECT_EQ(std::get<JobData>(*m).offset, i * kJobDataChunkBytesMax);
  }
  EXPECT_TRUE(dialer_events.drained.Pop().has_value()) << "the queue drained unannounced";
  EXPECT_EQ(dialer->queued_bytes(), 0u);
  // Once per request: writes that empty the queue later say nothing unasked.
  send_chunks(2);
  for (uint64_t i = 0; i < kChunks; ++i) ASSERT_TRUE(acceptor_events.messages.Pop().has_value());
  EXPECT_FALSE(dialer_events.drained.Pop(std::chrono::milliseconds(50)).has_value());
}

TEST(WireLink, HandlersMayReply) {
  LoopbackListener listener;
  Recorder dialer_events;
  EventQueue<uint64_t> echoed;
  std::unique_ptr<Link> acceptor;
  auto dialed = Dial(listener.endpoint(), testing::QuietLinkOptions());
  ASSERT_TRUE(dialed.ok());
  std::unique_ptr<Link> dialer = std::move(*dialed);
  dialer->Start(dialer_events.Handlers());
  acceptor = listener.NextLink();
  ASSERT_NE(acceptor, nullptr);
  Link* responder = acceptor.get();
  LinkHandlers echo;
  echo.on_message = [&, responder](Message m) {
    const uint64_t sequence = std::get<Heartbeat>(m).sequence;
    echoed.Push(sequence);
    EXPECT_TRUE(responder->Send(Heartbeat{sequence + 1}).ok());
  };
  acceptor->Start(std::move(echo));
  uint64_t sequence = 0;
  for (int round = 0; round < 100; ++round) {
    ASSERT_TRUE(dialer->Send(Heartbeat{sequence}).ok());
    std::optional<Message> reply = dialer_events.messages.Pop();
    ASSERT_TRUE(reply.has_value());
    ASSERT_EQ(std::get<Heartbeat>(*reply).sequence, sequence + 1);
    sequence += 2;
  }
  EXPECT_EQ(echoed.size(), 100u);
  dialer.reset();
  acceptor.reset();
}

TEST(WireLink, PostedFunctionsRunInOrderOnTheThreadThatRunsTheHandlers) {
  LoopbackListener listener;
  auto dialed = Dial(listener.endpoint(), testing::QuietLinkOptions());
  ASSERT_TRUE(dialed.ok()) << dialed.status().ToString();
  std::unique_ptr<Link> dialer = std::move(*dialed);
  EventQueue<std::thread::id> handler_thread;
  EventQueue<std::pair<int, std::thread::id>> posted;
  LinkHandlers handlers;
  handlers.on_message = [&](Message) { handler_thread.Push(std::this_thread::get_id()); };
  dialer->Start(std::move(handlers));
  std::unique_ptr<Link> acceptor = listener.NextLink();
  ASSERT_NE(acceptor, nullptr);
  acceptor->Start({});
  ASSERT_TRUE(acceptor->Send(Heartbeat{1}).ok());
  std::optional<std::thread::id> io_thread = handler_thread.Pop();
  ASSERT_TRUE(io_thread.has_value()) << "the heartbeat never arrived";
  for (int i = 0; i < 3; ++i) {
    dialer->Post([&posted, i] { posted.Push({i, std::this_thread::get_id()}); });
  }
  for (int i = 0; i < 3; ++i) {
    std::optional<std::pair<int, std::thread::id>> got = posted.Pop();
    ASSERT_TRUE(got.has_value()) << "post " << i << " never ran";
    EXPECT_EQ(got->first, i);
    EXPECT_EQ(got->second, *io_thread);
  }
  dialer.reset();  // before the queues its handlers write to
  acceptor.reset();
}

TEST(WireLink, NothingPostedRunsAfterCloseReturns) {
  LoopbackListener listener;
  Pair pair;
  Connect(listener, pair);
  std::atomic<int> runs{0};
  pair.dialer->Close();
  pair.dialer->Post([&runs] { ++runs; });
  // Close joined the I/O thread: the function can never run; it is dropped
  // with the link.
  pair.dialer.reset();
  EXPECT_EQ(runs.load(), 0);
}

TEST(WireLink, ReportsBothEndsAddresses) {
  LoopbackListener listener;
  Pair pair;
  Connect(listener, pair);
  const Endpoint dialer_local = pair.dialer->local_endpoint();
  EXPECT_EQ(dialer_local.address, "127.0.0.1");
  EXPECT_NE(dialer_local.port, 0);
  EXPECT_EQ(pair.acceptor->remote_endpoint(), dialer_local);
  EXPECT_EQ(pair.dialer->remote_endpoint(), listener.endpoint());
  EXPECT_EQ(pair.acceptor->local_endpoint(), listener.endpoint());
  EXPECT_EQ(pair.dialer->state().phase, LinkPhase::kOpen);
}

// Close() writes what was queued, ends the stream, and the other side sees a
// clean end after every message.
void ExpectCleanCloseSeenByPeer(Link& closer, Recorder& peer_events, Link& peer) {
  for (uint64_t i = 0; i < 20; ++i) ASSERT_TRUE(closer.Send(Heartbeat{i}).ok());
  closer.Close();
  for (uint64_t i = 0; i < 20; ++i) {
    std::optional<Message> got = peer_events.messages.Pop();
    ASSERT_TRUE(got.has_value()) << "frame " << i << " sent before Close() was lost";
    EXPECT_EQ(std::get<Heartbeat>(*got).sequence, i);
  }
  std::optional<LinkState> peer_state = peer_events.closed.Pop();
  ASSERT_TRUE(peer_state.has_value());
  EXPECT_EQ(peer_state->cause, CloseCause::kPeerClosed);
  EXPECT_EQ(peer_state->reason.code(), StatusCode::kUnavailable);
  EXPECT_EQ(peer.state().phase, LinkPhase::kClosed);

  const LinkState state = closer.state();
  EXPECT_EQ(state.phase, LinkPhase::kClosed);
  EXPECT_EQ(state.cause, CloseCause::kLocalClose);
  EXPECT_TRUE(state.reason.ok()) << state.reason.ToString();
  EXPECT_EQ(closer.stats().frames_dropped, 0u);
}

TEST(WireLink, CloseByTheDialerIsSeenByTheAcceptor) {
  LoopbackListener listener;
  Pair pair;
  Connect(listener, pair);
  ExpectCleanCloseSeenByPeer(*pair.dialer, pair.acceptor_events, *pair.acceptor);
  std::optional<LinkState> own = pair.dialer_events.closed.Pop();
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(own->cause, CloseCause::kLocalClose);
}

TEST(WireLink, CloseByTheAcceptorIsSeenByTheDialer) {
  LoopbackListener listener;
  Pair pair;
  Connect(listener, pair);
  ExpectCleanCloseSeenByPeer(*pair.acceptor, pair.dialer_events, *pair.dialer);
}

TEST(WireLink, CloseFromAHandlerIsClean) {
  LoopbackListener listener;
  Recorder dialer_events;
  EventQueue<LinkState> closed;
  auto dialed = Dial(listener.endpoint(), testing::QuietLinkOptions());
  ASSERT_TRUE(dialed.ok());
  std::unique_ptr<Link> dialer = std::move(*dialed);
  dialer->Start(dialer_events.Handlers());
  std::unique_ptr<Link> closer = listener.NextLink();
  ASSERT_NE(closer, nullptr);
  Link* self = closer.get();
  LinkHandlers close_on_message;
  close_on_message.on_message = [self](Message) { self->Close(); };
  close_on_message.on_closed = [&](const LinkState& s) { closed.Push(s); };
  closer->Start(std::move(close_on_message));
  ASSERT_TRUE(dialer->Send(Heartbeat{1}).ok());
  std::optional<LinkState> state = closed.Pop();
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->cause, CloseCause::kLocalClose);
  EXPECT_TRUE(state->reason.ok()) << state->reason.ToString();
  std::optional<LinkState> seen = dialer_events.closed.Pop();
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->cause, CloseCause::kPeerClosed);
  closer.reset();
  dialer.reset();
}

TEST(WireLink, SendAfterCloseIsUnavailable) {
  LoopbackListener listener;
  Pair pair;
  Connect(listener, pair);
  pair.dialer->Close();
  const Status sent = pair.dialer->Send(Heartbeat{1});
  EXPECT_EQ(sent.code(), StatusCode::kUnavailable);
  EXPECT_THAT(sent.message(), HasSubstr("dialer"));
  EXPECT_THAT(sent.message(), HasSubstr("Heartbeat"));
}

TEST(WireLink, SendRejectsAnInvalidMessage) {
  LoopbackListener listener;
  Pair pair;
  Connect(listener, pair);
  Job job = testing::SampleJob();
  job.record.key.consumed = 0;
  EXPECT_EQ(pair.dialer->Send(job).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(pair.dialer->stats().frames_out, 0u);
}

TEST(WireLink, FramesSentWhileConnectingAreDelivered) {
  LoopbackListener listener;
  auto dialed = Dial(listener.endpoint(), testing::QuietLinkOptions());
  ASSERT_TRUE(dialed.ok());
  std::unique_ptr<Link> dialer = std::move(*dialed);
  ASSERT_TRUE(dialer->Send(Heartbeat{77}).ok());  // maybe still connecting
  std::unique_ptr<Link> acceptor = listener.NextLink();
  ASSERT_NE(acceptor, nullptr);
  Recorder events;
  acceptor->Start(events.Handlers());
  std::optional<Message> got = events.messages.Pop();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(std::get<Heartbeat>(*got).sequence, 77u);
  dialer.reset();  // not started, so it closes without waiting for the peer's end
  acceptor.reset();
}

TEST(WireLink, DialToANonListeningPortFails) {
  Endpoint closed_port;
  {
    LoopbackListener listener;
    closed_port = listener.endpoint();
  }
  Recorder events;
  LinkOptions options = testing::QuietLinkOptions();
  options.name = "nobody";
  auto dialed = Dial(closed_port, options);
  ASSERT_TRUE(dialed.ok());
  std::unique_ptr<Link> link = std::move(*dialed);
  const Status queued = link->Send(Heartbeat{1});  // queued, or refused once closed
  EXPECT_TRUE(queued.ok() || queued.code() == StatusCode::kUnavailable) << queued.ToString();
  link->Start(events.Handlers());
  std::optional<LinkState> state = events.closed.Pop();
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->cause, CloseCause::kConnectFailed);
  EXPECT_EQ(state->reason.code(), StatusCode::kUnavailable);
  EXPECT_THAT(state->reason.message(), HasSubstr(closed_port.ToString()));
  EXPECT_EQ(events.opened.size(), 0u);
  link.reset();
}

TEST(WireLink, DialNeedsANumericAddress) {
  auto dialed = Dial(Endpoint{"localhost", 5000}, {});
  ASSERT_FALSE(dialed.ok());
  EXPECT_EQ(dialed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(dialed.status().message(), HasSubstr("numeric"));
}

TEST(WireListener, RejectsABadBindAddress) {
  ListenerOptions options = testing::QuietListening();
  options.bind = Endpoint{"not-an-ip", 0};
  auto listener = Listener::Open(options, [](std::unique_ptr<Link>) {});
  ASSERT_FALSE(listener.ok());
  EXPECT_EQ(listener.status().code(), StatusCode::kInvalidArgument);
}

TEST(WireListener, ClosesConnectionsOverItsBound) {
  ListenerOptions options = testing::QuietListening();
  options.links_max = 1;
  LoopbackListener listener(options);
  Pair pair;
  Connect(listener, pair);
  Recorder refused_events;
  auto dialed = Dial(listener.endpoint(), testing::QuietLinkOptions());
  ASSERT_TRUE(dialed.ok());
  std::unique_ptr<Link> refused = std::move(*dialed);
  refused->Start(refused_events.Handlers());
  std::optional<LinkState> state = refused_events.closed.Pop();
  ASSERT_TRUE(state.has_value());
  EXPECT_NE(state->cause, CloseCause::kLocalClose);
  EXPECT_EQ(listener.listener().stats().refused, 1u);
  EXPECT_EQ(listener.listener().stats().accepted, 1u);
  refused.reset();
}

TEST(WireListener, DualStackReportsIPv4PeersAsIPv4) {
  EventQueue<std::unique_ptr<Link>> accepted;
  ListenerOptions options = testing::QuietListening();
  options.bind = Endpoint{"::", 0};
  auto listener =
      Listener::Open(options, [&](std::unique_ptr<Link> link) { accepted.Push(std::move(link)); });
  if (!listener.ok()) GTEST_SKIP() << "no IPv6 here: " << listener.status().ToString();
  Recorder dialer_events;
  auto dialed = Dial(Endpoint{"127.0.0.1", (*listener)->local_endpoint().port}, {});
  ASSERT_TRUE(dialed.ok());
  (*dialed)->Start(dialer_events.Handlers());
  ASSERT_TRUE(dialer_events.opened.Pop().has_value());
  std::optional<std::unique_ptr<Link>> link = accepted.Pop();
  ASSERT_TRUE(link.has_value());
  EXPECT_EQ((*link)->remote_endpoint().address, "127.0.0.1");
  EXPECT_EQ((*link)->remote_endpoint().port, (*dialed)->local_endpoint().port);
}

}  // namespace
}  // namespace strata::wire
