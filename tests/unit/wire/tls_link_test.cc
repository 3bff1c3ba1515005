// Links over mutual TLS on loopback: messages both ways; handshakes refused
// (and counted on the refusing side) for a certificate from another CA, an
// expired certificate and a plaintext peer; a TLS peer to a plaintext
// listener; contexts that name the file they could not load.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "tests/unit/store/record/record_test_support.h"
#include "tests/unit/wire/tls_test_certs.h"
#include "tests/unit/wire/wire_test_util.h"
#include "wire/link/link.h"
#include "wire/listener.h"
#include "wire/tls.h"

namespace strata::wire {
namespace {

using strata::testing::ContextOf;
using strata::testing::Issue;
using strata::testing::Issued;
using strata::testing::ScratchDir;
using ::testing::HasSubstr;
using testing::LoopbackListener;
using testing::Recorder;

// A CA with a server and a client certificate, in a scratch directory.
struct Pki {
  ScratchDir dir;
  Issued ca = Issue(dir.path(), "ca", nullptr);
  Issued server = Issue(dir.path(), "server", &ca);
  Issued client = Issue(dir.path(), "client", &ca);
};

ListenerOptions TlsListening(std::shared_ptr<const TlsContext> tls) {
  ListenerOptions o = testing::QuietListening();
  o.link_options.name = "acceptor";
  o.link_options.tls = std::move(tls);
  return o;
}

struct Dialed {
  Recorder events;
  std::unique_ptr<Link> link;
  ~Dialed() { link.reset(); }
};

void DialWith(const LoopbackListener& listener, std::shared_ptr<const TlsContext> tls, Dialed& out,
              LinkOptions o = testing::QuietLinkOptions()) {
  o.name = "dialer";
  o.tls = std::move(tls);
  auto dialed = Dial(listener.endpoint(), o);
  ASSERT_TRUE(dialed.ok()) << dialed.status().ToString();
  out.link = std::move(*dialed);
  out.link->Start(out.events.Handlers());
}

// The accepted link must close with a failed handshake, counted once.
void ExpectAcceptedRefused(LoopbackListener& listener, const std::string& why) {
  Recorder events;
  std::unique_ptr<Link> accepted = listener.NextLink();
  ASSERT_NE(accepted, nullptr) << "no connection accepted";
  accepted->Start(events.Handlers());
  std::optional<LinkState> closed = events.closed.Pop();
  ASSERT_TRUE(closed.has_value()) << "the TLS listener kept the connection";
  EXPECT_EQ(closed->cause, CloseCause::kHandshakeFailed) << closed->reason.ToString();
  EXPECT_THAT(closed->reason.ToString(), HasSubstr(why));
  EXPECT_EQ(accepted->stats().tls_handshake_failures, 1u);
  EXPECT_FALSE(events.opened.Pop(std::chrono::milliseconds(0)).has_value());
  accepted.reset();
}

// The dialer never gets a working link: the handshake fails or the refusing
// side's alert closes it before any message.
void ExpectDialerRefused(Dialed& dialed) {
  std::optional<LinkState> closed = dialed.events.closed.Pop();
  ASSERT_TRUE(closed.has_value()) << "the refused dialer stayed open";
  EXPECT_NE(closed->cause, CloseCause::kLocalClose);
  EXPECT_FALSE(dialed.events.messages.Pop(std::chrono::milliseconds(0)).has_value());
}

TEST(TlsLink, DeliversEveryMessageTypeBothWays) {
  Pki pki;
  LoopbackListener listener(TlsListening(ContextOf(pki.server, pki.ca)));
  Dialed dialer;
  DialWith(listener, ContextOf(pki.client, pki.ca), dialer);
  Recorder acceptor_events;
  std::unique_ptr<Link> acceptor = listener.NextLink();
  ASSERT_NE(acceptor, nullptr);
  acceptor->Start(acceptor_events.Handlers());
  ASSERT_TRUE(dialer.events.opened.Pop().has_value());
  ASSERT_TRUE(acceptor_events.opened.Pop().has_value());

  const std::vector<Message> messages = testing::SampleMessages();
  for (const Message& m : messages) {
    ASSERT_TRUE(dialer.link->Send(m).ok());
    ASSERT_TRUE(acceptor->Send(m).ok());
  }
  for (Recorder* events : {&acceptor_events, &dialer.events}) {
    for (const Message& expected : messages) {
      std::optional<Message> got = events->messages.Pop();
      ASSERT_TRUE(got.has_value()) << "missing " << MessageName(expected);
      EXPECT_TRUE(*got == expected) << MessageName(expected);
    }
  }
  // A clean close from the dialer reaches the acceptor as the peer's end.
  dialer.link->Close();
  EXPECT_TRUE(dialer.link->state().reason.ok()) << dialer.link->state().reason.ToString();
  std::optional<LinkState> seen = acceptor_events.closed.Pop();
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->cause, CloseCause::kPeerClosed) << seen->reason.ToString();
  EXPECT_EQ(acceptor->stats().tls_handshake_failures, 0u);
  acceptor.reset();
}

TEST(TlsLink, ManyFramesArriveInOrderBothWaysAtOnce) {
  constexpr uint64_t kFrames = 3000;
  Pki pki;
  ListenerOptions options = TlsListening(ContextOf(pki.server, pki.ca));
  options.link_options.send_queue_frames_max = kFrames;
  LoopbackListener listener(options);
  Dialed dialer;
  DialWith(listener, ContextOf(pki.client, pki.ca), dialer, options.link_options);
  Recorder acceptor_events;
  std::unique_ptr<Link> acceptor = listener.NextLink();
  ASSERT_NE(acceptor, nullptr);
  acceptor->Start(acceptor_events.Handlers());
  std::thread other_side([&] {
    for (uint64_t i = 0; i < kFrames; ++i) EXPECT_TRUE(acceptor->Send(Heartbeat{i}).ok());
  });
  for (uint64_t i = 0; i < kFrames; ++i) {
    ASSERT_TRUE(dialer.link->Send(Heartbeat{i}).ok());
  }
  other_side.join();
  for (uint64_t i = 0; i < kFrames; ++i) {
    std::optional<Message> got = acceptor_events.messages.Pop();
    ASSERT_TRUE(got.has_value() && std::holds_alternative<Heartbeat>(*got)) << i;
    EXPECT_EQ(std::get<Heartbeat>(*got).sequence, i);
    got = dialer.events.messages.Pop();
    ASSERT_TRUE(got.has_value() && std::holds_alternative<Heartbeat>(*got)) << i;
    EXPECT_EQ(std::get<Heartbeat>(*got).sequence, i);
  }
  acceptor.reset();
}

TEST(TlsLink, ACertificateFromAnotherCaIsRefused) {
  Pki pki;
  Issued other_ca = Issue(pki.dir.path(), "other-ca", nullptr);
  Issued stranger = Issue(pki.dir.path(), "stranger", &other_ca);
  LoopbackListener listener(TlsListening(ContextOf(pki.server, pki.ca)));
  Dialed dialer;  // trusts the real CA, presents a certificate of the other one
  DialWith(listener, ContextOf(stranger, pki.ca), dialer);
  ExpectAcceptedRefused(listener, "certificate");
  ExpectDialerRefused(dialer);
}

TEST(TlsLink, TheDialerRefusesAServerOfAnotherCa) {
  Pki pki;
  Issued other_ca = Issue(pki.dir.path(), "other-ca", nullptr);
  Issued impostor = Issue(pki.dir.path(), "impostor", &other_ca);
  LoopbackListener listener(TlsListening(ContextOf(impostor, pki.ca)));
  Dialed dialer;
  DialWith(listener, ContextOf(pki.client, pki.ca), dialer);
  std::optional<LinkState> closed = dialer.events.closed.Pop();
  ASSERT_TRUE(closed.has_value());
  EXPECT_EQ(closed->cause, CloseCause::kHandshakeFailed) << closed->reason.ToString();
  EXPECT_THAT(closed->reason.ToString(), HasSubstr("unable to get local issuer certificate"));
  EXPECT_EQ(dialer.link->stats().tls_handshake_failures, 1u);
}

TEST(TlsLink, AnExpiredCertificateIsRefused) {
  Pki pki;
  Issued expired = Issue(pki.dir.path(), "expired", &pki.ca, -7200, -3600);
  LoopbackListener listener(TlsListening(ContextOf(pki.server, pki.ca)));
  Dialed dialer;
  DialWith(listener, ContextOf(expired, pki.ca), dialer);
  ExpectAcceptedRefused(listener, "certificate has expired");
  ExpectDialerRefused(dialer);
}

TEST(TlsLink, APlaintextPeerIsRefused) {
  Pki pki;
  LoopbackListener listener(TlsListening(ContextOf(pki.server, pki.ca)));
  Dialed dialer;
  DialWith(listener, nullptr, dialer);
  ASSERT_TRUE(dialer.link->Send(testing::SampleHello()).ok());
  ExpectAcceptedRefused(listener, "TLS handshake failed");
  ExpectDialerRefused(dialer);
}

TEST(TlsLink, ATlsPeerToAPlaintextListenerNeverOpens) {
  Pki pki;
  LoopbackListener listener;
  Dialed dialer;
  DialWith(listener, ContextOf(pki.client, pki.ca), dialer);
  Recorder events;
  std::unique_ptr<Link> accepted = listener.NextLink();
  ASSERT_NE(accepted, nullptr);
  accepted->Start(events.Handlers());
  std::optional<LinkState> closed = events.closed.Pop();
  ASSERT_TRUE(closed.has_value()) << "the ClientHello was taken for a frame";
  EXPECT_EQ(closed->cause, CloseCause::kRejectedFrame) << closed->reason.ToString();
  EXPECT_FALSE(events.messages.Pop(std::chrono::milliseconds(0)).has_value());
  accepted.reset();
  ExpectDialerRefused(dialer);
}

TEST(TlsContext, ErrorsNameTheFileThatFailed) {
  Pki pki;
  const TlsConfig good = strata::testing::ConfigOf(pki.client, pki.ca);
  TlsConfig missing = good;
  missing.ca_file = pki.dir.path() + "/absent.crt";
  Result<std::shared_ptr<const TlsContext>> made = TlsContext::Create(missing);
  ASSERT_FALSE(made.ok());
  EXPECT_THAT(made.status().ToString(), HasSubstr("CA certificate '" + missing.ca_file + "'"));

  TlsConfig swapped = good;  // a key where the certificate belongs
  swapped.cert_file = good.key_file;
  made = TlsContext::Create(swapped);
  ASSERT_FALSE(made.ok());
  EXPECT_THAT(made.status().ToString(), HasSubstr("certificate '" + good.key_file + "'"));

  TlsConfig mismatched = good;  // the server's key with the client's certificate
  mismatched.key_file = pki.server.key_file;
  made = TlsContext::Create(mismatched);
  ASSERT_FALSE(made.ok());
  EXPECT_THAT(made.status().ToString(),
              HasSubstr("not the key of the certificate '" + good.cert_file + "'"));

  made = TlsContext::Create(good);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ((*made)->config().ca_file, good.ca_file);
}

}  // namespace
}  // namespace strata::wire
