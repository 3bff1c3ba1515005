// Links that share one I/O thread (LinkOptions::io_thread, rank zero's record
// links with [cluster] shared_link_thread), over real sockets: each still
// delivers its own frames in order, all on that one thread; one closing or
// being destroyed leaves the others serving; a handler that throws is counted
// and the thread goes on; and a spinning shared thread counts its own finds.
// Every wait is on the event, with a bound; nothing depends on the machine's
// speed.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "store/base/idle_spin.h"
#include "tests/unit/wire/wire_test_util.h"
#include "wire/link/link.h"
#include "wire/link/link_io_thread.h"
#include "wire/listener.h"

namespace strata::wire {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::EventQueue;
using testing::LoopbackListener;
using testing::QuietLinkOptions;
using testing::QuietListening;
using testing::Recorder;

// `n` dialed links (each on its own thread) and the links a listener
// accepted for them, all on `shared`. Destroys the links before the thread.
struct SharedLinks {
  SharedLinks(size_t n, std::chrono::microseconds spin = std::chrono::microseconds(0))
      : shared(std::make_unique<LinkIoThread>("test links", spin)),
        listener([&] {
          ListenerOptions o = QuietListening();
          o.link_options.io_thread = shared.get();
          o.link_options.close_timeout = milliseconds(500);
          return o;
        }()),
        dialer_events(n),
        acceptor_events(n) {
    for (size_t i = 0; i < n; ++i) {
      auto d = Dial(listener.endpoint(), QuietLinkOptions());
      if (!d.ok()) return;
      dialers.push_back(std::move(*d));
      dialers.back()->Start(dialer_events[i].Handlers());
      // Accepted in dial order: each dial is accepted before the next.
      std::unique_ptr<Link> accepted = listener.NextLink();
      if (!accepted) return;
      acceptors.push_back(std::move(accepted));
    }
  }
  ~SharedLinks() {
    acceptors.clear();
    dialers.clear();
    shared.reset();  // every link on it is gone
  }

  // Starts acceptor i with its recorder's handlers.
  void StartAcceptor(size_t i) { acceptors[i]->Start(acceptor_events[i].Handlers()); }

  std::unique_ptr<LinkIoThread> shared;
  LoopbackListener listener;
  std::vector<Recorder> dialer_events;
  std::vector<Recorder> acceptor_events;
  std::vector<std::unique_ptr<Link>> dialers;
  std::vector<std::unique_ptr<Link>> acceptors;
};

// Sends Heartbeat{seq} from `from` and returns what `to` received, or
// nullopt when nothing arrived in time.
std::optional<uint64_t> Exchange(Link& from, Recorder& to, uint64_t seq) {
  if (!from.Send(Heartbeat{seq}).ok()) return std::nullopt;
  std::optional<Message> m = to.messages.Pop();
  if (!m || !std::holds_alternative<Heartbeat>(*m)) return std::nullopt;
  return std::get<Heartbeat>(*m).sequence;
}

TEST(LinkSharedThreadTest, LinksOnOneThreadEachDeliverTheirOwnFramesInOrderOnThatThread) {
  constexpr size_t kLinks = 3;
  SharedLinks links(kLinks);
  ASSERT_EQ(links.acceptors.size(), kLinks);
  EventQueue<std::thread::id> threads;
  std::vector<EventQueue<uint64_t>> received(kLinks);
  for (size_t i = 0; i < kLinks; ++i) {
    LinkHandlers h;
    h.on_message = [&, i](Message m) {
      threads.Push(std::this_thread::get_id());
      received[i].Push(std::get<Heartbeat>(m).sequence);
    };
    links.acceptors[i]->Start(std::move(h));
  }
  // Interleaved sends: link i sends 100 * i + 1, 100 * i + 2, ...
  for (uint64_t k = 1; k <= 5; ++k) {
    for (size_t i = 0; i < kLinks; ++i)
      ASSERT_TRUE(links.dialers[i]->Send(Heartbeat{100 * i + k}).ok());
  }
  for (size_t i = 0; i < kLinks; ++i) {
    for (uint64_t k = 1; k <= 5; ++k) {
      std::optional<uint64_t> seq = received[i].Pop();
      ASSERT_TRUE(seq.has_value()) << "link " << i << " frame " << k;
      EXPECT_EQ(*seq, 100 * i + k) << "link " << i << " got another link's frame or out of order";
    }
  }
  std::set<std::thread::id> ids;
  while (std::optional<std::thread::id> id = threads.Pop(milliseconds(0))) ids.insert(*id);
  EXPECT_EQ(ids.size(), 1u) << "handlers ran on more than one thread";
  // The accepted links answer on the same thread.
  for (size_t i = 0; i < kLinks; ++i) {
    EXPECT_EQ(Exchange(*links.acceptors[i], links.dialer_events[i], 7 + i), 7 + i);
  }
}

TEST(LinkSharedThreadTest, ClosingOneLinkLeavesTheOthersServing) {
  SharedLinks links(2);
  ASSERT_EQ(links.acceptors.size(), 2u);
  links.StartAcceptor(0);
  links.StartAcceptor(1);
  ASSERT_EQ(Exchange(*links.dialers[0], links.acceptor_events[0], 1), 1u);
  // Destroying a link on the shared thread waits for its close there,
  // on_closed included, and leaves the thread running.
  links.acceptors[0].reset();
  EXPECT_EQ(links.acceptor_events[0].closed.size(), 1u)
      << "on_closed not run before Close returned";
  std::optional<LinkState> peer = links.dialer_events[0].closed.Pop();
  ASSERT_TRUE(peer.has_value());
  EXPECT_EQ(peer->cause, CloseCause::kPeerClosed);
  for (uint64_t k = 1; k <= 3; ++k) {
    EXPECT_EQ(Exchange(*links.dialers[1], links.acceptor_events[1], k), k);
    EXPECT_EQ(Exchange(*links.acceptors[1], links.dialer_events[1], 10 + k), 10 + k);
  }
}

TEST(LinkSharedThreadTest, APeerThatLeavesIsReportedAndItsLinkIsDestroyedAtOnce) {
  SharedLinks links(2);
  ASSERT_EQ(links.acceptors.size(), 2u);
  links.StartAcceptor(0);
  links.StartAcceptor(1);
  links.dialers[0].reset();
  std::optional<LinkState> closed = links.acceptor_events[0].closed.Pop();
  ASSERT_TRUE(closed.has_value());
  EXPECT_EQ(closed->cause, CloseCause::kPeerClosed);
  const auto began = std::chrono::steady_clock::now();
  links.acceptors[0].reset();  // closed already: nothing to wait for
  EXPECT_LT(std::chrono::steady_clock::now() - began, seconds(5));
  EXPECT_EQ(links.acceptor_events[0].closed.size(), 0u) << "on_closed ran twice";
  EXPECT_EQ(Exchange(*links.dialers[1], links.acceptor_events[1], 5), 5u);
}

TEST(LinkSharedThreadTest, AHandlerThatThrowsIsCountedAndTheThreadGoesOn) {
  SharedLinks links(2);
  ASSERT_EQ(links.acceptors.size(), 2u);
  LinkHandlers throwing;
  throwing.on_message = [](Message) { throw std::runtime_error("handler bug"); };
  links.acceptors[0]->Start(std::move(throwing));
  links.StartAcceptor(1);
  ASSERT_TRUE(links.dialers[0]->Send(Heartbeat{1}).ok());
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (links.shared->stats().handler_throws == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_EQ(links.shared->stats().handler_throws, 1u);
  EXPECT_EQ(Exchange(*links.dialers[1], links.acceptor_events[1], 2), 2u)
      << "the shared thread stopped serving after a throw";
}

TEST(LinkSharedThreadTest, ASpinningSharedThreadCountsItsOwnFindsNotTheLinks) {
  const ScopedSpinSlots slots(1);  // the shared thread always finds a slot
  SharedLinks links(2, seconds(5));
  ASSERT_EQ(links.acceptors.size(), 2u);
  links.StartAcceptor(0);
  links.StartAcceptor(1);
  ASSERT_EQ(Exchange(*links.dialers[0], links.acceptor_events[0], 1), 1u);
  std::this_thread::sleep_for(milliseconds(20));  // into its spin
  const LinkIoStats before = links.shared->stats();
  std::this_thread::sleep_for(milliseconds(20));
  ASSERT_EQ(Exchange(*links.dialers[1], links.acceptor_events[1], 2), 2u);
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  LinkIoStats after = links.shared->stats();
  while (after.idle_spin_hits <= before.idle_spin_hits &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
    after = links.shared->stats();
  }
  EXPECT_GT(after.idle_spin_hits, before.idle_spin_hits)
      << "the second link's frame was not caught";
  EXPECT_GE(after.idle_spin_ns - before.idle_spin_ns, uint64_t{10'000'000})
      << "it polled through the 20 ms pause";
  for (const auto& a : links.acceptors) EXPECT_EQ(a->stats().idle_spin_hits, 0u);
}

}  // namespace
}  // namespace strata::wire
