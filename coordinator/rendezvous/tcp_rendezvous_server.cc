// TcpRendezvousServer: rank zero's side of the TCP rendezvous
// (tcp_rendezvous.h); the peers' side is in tcp_rendezvous_client.cc.
#include "coordinator/rendezvous/tcp_rendezvous.h"

#include <algorithm>
#include <array>
#include <asio.hpp>
#include <asio/ssl.hpp>
#include <list>
#include <optional>
#include <thread>
#include <vector>

#include "coordinator/rendezvous/rendezvous_protocol.h"
#include "coordinator/rendezvous/rendezvous_roster.h"
#include "coordinator/rendezvous/tcp_rendezvous_net.h"
#include "wire/tls_asio.h"

namespace strata {

namespace {

using rendezvous_net::Clock;
using rendezvous_net::NetError;
using rendezvous_net::tcp;

// How long rank zero keeps writing Reject frames after the rendezvous failed.
constexpr std::chrono::seconds kRejectFlushBound{2};

std::string AddressText(const asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).to_string();
  }
  return a.to_string();
}

}  // namespace

struct TcpRendezvousServer::Impl {
  struct Conn {
    explicit Conn(asio::io_context& io) : socket(io), hello_timer(io) {}
    tcp::socket socket;
    asio::steady_timer hello_timer;
    std::array<uint8_t, kRendezvousLengthBytes> length{};
    std::vector<uint8_t> payload;
    std::array<uint8_t, 1> watch{};
    std::optional<RankId> rank;  // set once admitted
    Nonce challenge;             // what this connection's hello must prove
    std::string peer_ip;
    std::string local_ip;
    bool open = true;
    // The challenge is written (after the TLS handshake, if any): a Reject
    // may be written now without overlapping another write.
    bool ready = false;
    // Over `socket` when the rendezvous runs TLS; every read and write then
    // goes through it.
    std::optional<asio::ssl::stream<tcp::socket&>> tls;

    template <typename Buffers, typename Handler>
    void Read(const Buffers& buffers, Handler handler) {
      if (tls) {
        asio::async_read(*tls, buffers, std::move(handler));
      } else {
        asio::async_read(socket, buffers, std::move(handler));
      }
    }
    template <typename Buffers, typename Handler>
    void Write(const Buffers& buffers, Handler handler) {
      if (tls) {
        asio::async_write(*tls, buffers, std::move(handler));
      } else {
        asio::async_write(socket, buffers, std::move(handler));
      }
    }
  };
  using ConnPtr = std::shared_ptr<Conn>;
  enum class Phase : unsigned char { kIdle, kRunning, kTicketsSent, kFailed };

  Impl(JobSecret s, NonceSource n, TcpRendezvousLimits l, ProblemObserver p,
       std::shared_ptr<const wire::TlsContext> t)
      : secret(std::move(s)),
        nonces(std::move(n)),
        limits(l),
        on_problem(std::move(p)),
        tls(std::move(t)) {}

  asio::io_context io;
  tcp::acceptor acceptor{io};
  JobSecret secret;
  NonceSource nonces;  // join nonces and challenges
  TcpRendezvousLimits limits;
  ProblemObserver on_problem;
  std::shared_ptr<const wire::TlsContext> tls;  // null: plaintext
  TcpRendezvousStats stats;
  std::optional<RendezvousRoster> roster;
  uint16_t record_port = 0;
  Phase phase = Phase::kIdle;
  Status failure;
  Status last_refusal;  // the newest refused hello's reason, for the deadline message
  size_t writes_pending = 0;
  std::list<ConnPtr> conns;

  void Problem(const Status& s) {
    if (on_problem) on_problem(s);
  }

  void Close(const ConnPtr& c) {
    if (!c->open) return;
    c->open = false;
    asio::error_code ignored;
    c->hello_timer.cancel();
    c->socket.close(ignored);
    conns.remove(c);
  }

  void MaybeStop() {
    if (phase != Phase::kRunning && writes_pending == 0) io.stop();
  }

  // Writes `frame` and then closes the connection.
  void SendAndClose(const ConnPtr& c, std::vector<uint8_t> frame) {
    auto bytes = std::make_shared<std::vector<uint8_t>>(std::move(frame));
    ++writes_pending;
    c->Write(asio::buffer(*bytes), [this, c, bytes](const asio::error_code& ec, size_t) {
      --writes_pending;
      if (ec && phase == Phase::kTicketsSent && c->rank.has_value() && failure.ok()) {
        failure = NetError("rank " + std::to_string(c->rank->value) +
                               " disconnected before it received its ticket",
                           ec);
      }
      Close(c);
      MaybeStop();
    });
  }

  // A non-fatal problem with one connection, counted in `*counter`: tell it
  // why and close it; the rendezvous goes on.
  void RejectOne(const ConnPtr& c, const Status& why, uint64_t* counter) {
    ++*counter;
    Problem(why.WithContext("rendezvous connection from " + c->peer_ip));
    c->hello_timer.cancel();
    SendAndClose(c, EncodeRendezvousFrame(RendezvousReject{why.message()}));
  }

  // The rendezvous fails: every connected peer gets the reason.
  void Fail(const Status& why) {
    phase = Phase::kFailed;
    failure = why;
    asio::error_code ignored;
    acceptor.close(ignored);
    const std::vector<ConnPtr> all(conns.begin(), conns.end());
    for (const ConnPtr& c : all) {
      c->hello_timer.cancel();
      if (c->ready) {
        SendAndClose(c, EncodeRendezvousFrame(RendezvousReject{why.message()}));
      } else {
        Close(c);  // mid-handshake: nothing can be written yet
      }
    }
    MaybeStop();
  }

  void SendTickets() {
    phase = Phase::kTicketsSent;
    asio::error_code ignored;
    acceptor.close(ignored);
    const std::vector<ConnPtr> all(conns.begin(), conns.end());
    for (const ConnPtr& c : all) {
      if (!c->rank.has_value()) {
        Close(c);
        continue;
      }
      const RendezvousPeer* peer = roster->Find(*c->rank);
      JoinTicket ticket{roster->world_size(), c->local_ip, record_port, peer->nonce};
      SendAndClose(c, EncodeRendezvousFrame(ticket));
    }
    MaybeStop();
  }

  void Accept() {
    acceptor.async_accept([this](const asio::error_code& ec, tcp::socket socket) {
      if (ec) {
        if (ec != asio::error::operation_aborted && phase == Phase::kRunning) {
          Problem(NetError("rendezvous accept", ec));
          Accept();
        }
        return;
      }
      ++stats.connections;
      if (conns.size() >= limits.connections_max) {
        ++stats.refused_over_limit;
        asio::error_code ignored;
        socket.close(ignored);
      } else {
        Start(std::move(socket));
      }
      if (phase == Phase::kRunning) Accept();
    });
  }

  void Start(tcp::socket socket) {
    auto c = std::make_shared<Conn>(io);
    c->socket = std::move(socket);
    asio::error_code ec1;
    asio::error_code ec2;
    const tcp::endpoint remote = c->socket.remote_endpoint(ec1);
    const tcp::endpoint local = c->socket.local_endpoint(ec2);
    if (ec1 || ec2) {
      asio::error_code ignored;
      c->socket.close(ignored);
      return;
    }
    c->peer_ip = AddressText(remote.address());
    c->local_ip = AddressText(local.address());
    conns.push_back(c);
    c->hello_timer.expires_after(limits.hello_timeout);
    c->hello_timer.async_wait([this, c](const asio::error_code& ec) {
      if (ec || !c->open || c->rank.has_value() || phase != Phase::kRunning) return;
      ++stats.hello_timeouts;
      Problem(Status::Unavailable("rendezvous connection from " + c->peer_ip +
                                  ": no hello within the hello timeout"));
      Close(c);
    });
    if (!tls) {
      SendChallenge(c);
      return;
    }
    // The handshake is bounded by the hello timer, like the hello itself.
    c->tls.emplace(c->socket, tls->impl().context());
    c->tls->async_handshake(asio::ssl::stream_base::server, [this, c](const asio::error_code& ec) {
      if (!c->open || phase != Phase::kRunning) return;
      if (ec) {
        ++stats.tls_handshake_failures;
        Problem(Status::Unavailable("rendezvous connection from " + c->peer_ip + ": " +
                                    wire::DescribeHandshakeFailure(c->tls->native_handle(), ec)));
        Close(c);
        return;
      }
      SendChallenge(c);
    });
  }

  // Draws this connection's challenge and writes it; the hello is read after.
  void SendChallenge(const ConnPtr& c) {
    Result<Nonce> challenge = nonces();
    if (!challenge.ok()) {
      Fail(challenge.status().WithContext("rendezvous challenge"));
      return;
    }
    c->challenge = *challenge;
    auto frame = std::make_shared<std::vector<uint8_t>>(
        EncodeRendezvousFrame(RendezvousChallenge{c->challenge}));
    c->Write(asio::buffer(*frame), [this, c, frame](const asio::error_code& ec, size_t) {
      if (!c->open || phase != Phase::kRunning) return;
      if (ec) {
        Close(c);  // gone before its hello: nothing to withdraw
        return;
      }
      ReadHello(c);
    });
  }

  void ReadHello(const ConnPtr& c) {
    c->ready = true;
    c->Read(asio::buffer(c->length),
            [this, c](const asio::error_code& ec, size_t) { OnLength(c, ec); });
  }

  void OnLength(const ConnPtr& c, const asio::error_code& ec) {
    if (!c->open || phase != Phase::kRunning) return;
    if (ec) {
      Close(c);  // gone before its hello: nothing to withdraw
      return;
    }
    Result<size_t> n = DecodeRendezvousLength(c->length);
    if (!n.ok()) {
      RejectOne(c, n.status(), &stats.bad_frames);
      return;
    }
    c->payload.resize(*n);
    c->Read(asio::buffer(c->payload),
            [this, c](const asio::error_code& ec2, size_t) { OnPayload(c, ec2); });
  }

  void OnPayload(const ConnPtr& c, const asio::error_code& ec) {
    if (!c->open || phase != Phase::kRunning) return;
    if (ec) {
      Close(c);
      return;
    }
    Result<RendezvousMessage> m = DecodeRendezvousPayload(c->payload);
    if (!m.ok()) {
      RejectOne(c, m.status(), &stats.bad_frames);
      return;
    }
    const auto* hello = std::get_if<RendezvousHello>(&*m);
    if (hello == nullptr) {
      RejectOne(c, Status::Corruption("rendezvous message: expected a hello"), &stats.bad_frames);
      return;
    }
    c->hello_timer.cancel();
    if (!HelloProven(secret, c->challenge, hello->rank, hello->world_size, hello->proof)) {
      last_refusal = Status::InvalidArgument(
          "hello for rank " + std::to_string(hello->rank.value) +
          " not proven: its job secret is not this job's (a process of another job, or a rank "
          "started without this job's secret)");
      RejectOne(c, last_refusal, &stats.hellos_unproven);
      return;
    }
    Result<Nonce> nonce = nonces();
    if (!nonce.ok()) {
      Fail(nonce.status());
      return;
    }
    Status admitted = roster->Admit(hello->rank, hello->world_size, c->peer_ip, *nonce);
    if (!admitted.ok()) {
      last_refusal = admitted;
      RejectOne(c, admitted, &stats.hellos_refused);
      return;
    }
    c->rank = hello->rank;
    if (roster->complete()) {
      SendTickets();
      return;
    }
    // Anything the peer sends or closes before its ticket withdraws it.
    auto on_watch = [this, c](const asio::error_code&, size_t) {
      if (!c->open || phase != Phase::kRunning) return;
      ++stats.withdrawn;
      roster->Withdraw(*c->rank);
      Problem(Status::Unavailable("rank " + std::to_string(c->rank->value) + " (from " +
                                  c->peer_ip + ") disconnected before its ticket; it may rejoin"));
      Close(c);
    };
    if (c->tls) {
      c->tls->async_read_some(asio::buffer(c->watch), on_watch);
    } else {
      c->socket.async_read_some(asio::buffer(c->watch), on_watch);
    }
  }

  void CloseAll() {
    asio::error_code ignored;
    acceptor.close(ignored);
    const std::vector<ConnPtr> all(conns.begin(), conns.end());
    for (const ConnPtr& c : all) Close(c);
    // Run the aborted handlers so none outlives this call's state.
    io.restart();
    io.run_for(std::chrono::milliseconds(100));
  }
};

TcpRendezvousServer::TcpRendezvousServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TcpRendezvousServer::~TcpRendezvousServer() = default;

Result<std::unique_ptr<TcpRendezvousServer>> TcpRendezvousServer::Listen(
    const std::string& address, uint16_t port, JobSecret secret, NonceSource nonces,
    TcpRendezvousLimits limits, ProblemObserver on_problem,
    std::shared_ptr<const wire::TlsContext> tls) {
  try {
    auto impl = std::make_unique<Impl>(std::move(secret), std::move(nonces), limits,
                                       std::move(on_problem), std::move(tls));
    asio::error_code ec;
    tcp::resolver resolver(impl->io);
    const auto endpoints = resolver.resolve(
        address, std::to_string(port), tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec) return NetError("rendezvous: cannot resolve master address " + address, ec);
    asio::error_code last = asio::error::host_not_found;
    for (const auto& entry : endpoints) {
      tcp::acceptor& a = impl->acceptor;
      asio::error_code ignored;
      a.close(ignored);
      if (a.open(entry.endpoint().protocol(), ec) ||
          a.set_option(tcp::acceptor::reuse_address(true), ec) || a.bind(entry.endpoint(), ec) ||
          a.listen(asio::socket_base::max_listen_connections, ec)) {
        last = ec;
        continue;
      }
      return std::unique_ptr<TcpRendezvousServer>(new TcpRendezvousServer(std::move(impl)));
    }
    return NetError("rendezvous: cannot listen on " + address + ":" + std::to_string(port) +
                        " (master_addr must be an address of rank zero's host)",
                    last);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("rendezvous listen: ") + e.what());
  }
}

std::string TcpRendezvousServer::address() const {
  asio::error_code ec;
  return impl_->acceptor.local_endpoint(ec).address().to_string();
}

uint16_t TcpRendezvousServer::port() const {
  asio::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

const TcpRendezvousStats& TcpRendezvousServer::stats() const { return impl_->stats; }

Result<PeerTable> TcpRendezvousServer::AwaitPeers(uint32_t world_size, uint16_t record_port,
                                                  RendezvousDeadline deadline) {
  Impl& m = *impl_;
  if (m.phase != Impl::Phase::kIdle) {
    return Status::FailedPrecondition("AwaitPeers called twice on one rendezvous");
  }
  if (record_port == 0) return Status::InvalidArgument("rendezvous: record port 0 (not bound)");
  try {
    m.roster.emplace(world_size);
    m.record_port = record_port;
    m.phase = Impl::Phase::kRunning;
    if (m.roster->complete()) {
      m.phase = Impl::Phase::kTicketsSent;
    } else {
      m.Accept();
      m.io.run_until(deadline);
    }
    if (m.phase == Impl::Phase::kRunning) {
      // The deadline passed: tell whoever is connected, within a bound.
      std::string why = "rendezvous deadline passed: " + m.roster->MissingSummary();
      const uint64_t refused = m.stats.hellos_unproven + m.stats.hellos_refused;
      if (refused > 0) {
        why += "; " + std::to_string(refused) +
               " hello(s) refused, the last: " + m.last_refusal.message();
      }
      m.Fail(Status::Unavailable(why));
      m.io.restart();
      m.io.run_for(kRejectFlushBound);
    }
    m.CloseAll();
    if (m.phase == Impl::Phase::kFailed) return m.failure;
    if (!m.failure.ok()) return m.failure;
    return m.roster->Table();
  } catch (const std::exception& e) {
    return Status::Internal(std::string("rendezvous: ") + e.what());
  }
}

}  // namespace strata
