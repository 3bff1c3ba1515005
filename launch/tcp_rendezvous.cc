#include "launch/tcp_rendezvous.h"

#include <algorithm>
#include <array>
#include <asio.hpp>
#include <asio/ssl.hpp>
#include <list>
#include <optional>
#include <thread>
#include <vector>

#include "coordinator/rendezvous_roster.h"
#include "launch/rendezvous_protocol.h"
#include "wire/tls_asio.h"

namespace strata {

namespace {

using asio::ip::tcp;
using Clock = RendezvousClock;

// How long rank zero keeps writing Reject frames after the rendezvous failed.
constexpr std::chrono::seconds kRejectFlushBound{2};

std::string AddressText(const asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).to_string();
  }
  return a.to_string();
}

Status NetError(const std::string& what, const asio::error_code& ec) {
  return Status::Unavailable(what + ": " + ec.message());
}

}  // namespace

// ---------------------------------------------------------------- server

struct TcpRendezvousServer::Impl {
  struct Conn {
    explicit Conn(asio::io_context& io) : socket(io), hello_timer(io) {}
    tcp::socket socket;
    asio::steady_timer hello_timer;
    std::array<uint8_t, kRendezvousLengthBytes> length{};
    std::vector<uint8_t> payload;
    std::array<uint8_t, 1> watch{};
    std::optional<RankId> rank;  // set once admitted
    std::string peer_ip;
    std::string local_ip;
    bool open = true;
    bool ready = false;  // the TLS handshake is done (or there is none)
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

  Impl(NonceSource n, TcpRendezvousLimits l, ProblemObserver p,
       std::shared_ptr<const wire::TlsContext> t)
      : nonces(std::move(n)), limits(l), on_problem(std::move(p)), tls(std::move(t)) {}

  asio::io_context io;
  tcp::acceptor acceptor{io};
  NonceSource nonces;
  TcpRendezvousLimits limits;
  ProblemObserver on_problem;
  std::shared_ptr<const wire::TlsContext> tls;  // null: plaintext
  TcpRendezvousStats stats;
  std::optional<RendezvousRoster> roster;
  uint16_t record_port = 0;
  Phase phase = Phase::kIdle;
  Status failure;
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

  // A non-fatal problem with one connection: tell it why and close it.
  void RejectOne(const ConnPtr& c, const Status& why) {
    ++stats.bad_frames;
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
      ReadHello(c);
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
      RejectOne(c, n.status());
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
      RejectOne(c, m.status());
      return;
    }
    const auto* hello = std::get_if<RendezvousHello>(&*m);
    if (hello == nullptr) {
      RejectOne(c, Status::Corruption("rendezvous message: expected a hello"));
      return;
    }
    c->hello_timer.cancel();
    Result<Nonce> nonce = nonces();
    if (!nonce.ok()) {
      Fail(nonce.status());
      return;
    }
    Status admitted = roster->Admit(hello->rank, hello->world_size, c->peer_ip, *nonce);
    if (!admitted.ok()) {
      Fail(admitted);
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
    const std::string& address, uint16_t port, NonceSource nonces, TcpRendezvousLimits limits,
    ProblemObserver on_problem, std::shared_ptr<const wire::TlsContext> tls) {
  try {
    auto impl =
        std::make_unique<Impl>(std::move(nonces), limits, std::move(on_problem), std::move(tls));
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
      m.Fail(Status::Unavailable("rendezvous deadline passed: " + m.roster->MissingSummary()));
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

// ---------------------------------------------------------------- client

namespace {

// Runs the one operation `start` begins until it completes or `limit`;
// asio::error::timed_out (and the socket closed) when the limit came first.
template <typename Start>
asio::error_code RunUntil(asio::io_context& io, tcp::socket& socket, Clock::time_point limit,
                          Start start) {
  std::optional<asio::error_code> result;
  io.restart();
  start([&result](const asio::error_code& ec) { result = ec; });
  io.run_until(limit);
  if (result.has_value()) return *result;
  asio::error_code ignored;
  socket.close(ignored);
  io.restart();
  io.run();  // the aborted handler
  return asio::error::timed_out;
}

// One attempt's result: a ticket, an error to retry, or an error to return.
struct Attempt {
  std::optional<JoinTicket> ticket;
  Status status;
  bool retry = false;
};

Attempt Retry(Status s) { return {std::nullopt, std::move(s), true}; }
Attempt Fatal(Status s) { return {std::nullopt, std::move(s), false}; }

// A failure of TLS itself (a certificate refused by either side, a peer
// that does not speak TLS), which retrying cannot fix.
bool IsTlsFailure(const asio::error_code& ec) {
  return ec.category() == asio::error::get_ssl_category();
}

Attempt TryJoin(const std::string& host, uint16_t port, RankId rank, uint32_t world_size,
                Clock::time_point deadline, const TcpRendezvousLimits& limits,
                const wire::TlsContext* tls_context) {
  asio::io_context io;
  tcp::resolver resolver(io);
  asio::error_code ec;
  const auto endpoints =
      resolver.resolve(host, std::to_string(port), tcp::resolver::numeric_service, ec);
  if (ec) return Retry(NetError("resolve " + host, ec));
  tcp::socket socket(io);
  const Clock::time_point now = Clock::now();
  ec = RunUntil(
      io, socket, std::min(deadline, now + limits.connect_attempt_timeout), [&](auto done) {
        asio::async_connect(socket, endpoints,
                            [done](const asio::error_code& e, const tcp::endpoint&) { done(e); });
      });
  if (ec) return Retry(NetError("connect", ec));
  std::optional<asio::ssl::stream<tcp::socket&>> tls;
  if (tls_context != nullptr) {
    tls.emplace(socket, tls_context->impl().context());
    ec = RunUntil(io, socket, std::min(deadline, Clock::now() + limits.connect_attempt_timeout),
                  [&](auto done) { tls->async_handshake(asio::ssl::stream_base::client, done); });
    if (ec && IsTlsFailure(ec)) {
      return Fatal(Status::Unavailable("rendezvous with " + host + ": " +
                                       wire::DescribeHandshakeFailure(tls->native_handle(), ec) +
                                       " (is rank zero running with the same [tls] ca?)"));
    }
    if (ec) return Retry(NetError("TLS handshake", ec));
  }
  // Reads and writes go through TLS when it is on.
  auto write = [&](const auto& buffers, auto done) {
    if (tls) {
      asio::async_write(*tls, buffers, done);
    } else {
      asio::async_write(socket, buffers, done);
    }
  };
  auto read = [&](const auto& buffers, auto done) {
    if (tls) {
      asio::async_read(*tls, buffers, done);
    } else {
      asio::async_read(socket, buffers, done);
    }
  };
  const std::vector<uint8_t> hello = EncodeRendezvousFrame(RendezvousHello{rank, world_size});
  ec =
      RunUntil(io, socket, std::min(deadline, Clock::now() + limits.write_timeout), [&](auto done) {
        write(asio::buffer(hello), [done](const asio::error_code& e, size_t) { done(e); });
      });
  if (ec) return Retry(NetError("send hello", ec));
  // Rank zero answers once every rank has joined: wait up to the deadline.
  std::array<uint8_t, kRendezvousLengthBytes> length{};
  ec = RunUntil(io, socket, deadline, [&](auto done) {
    read(asio::buffer(length), [done](const asio::error_code& e, size_t) { done(e); });
  });
  if (ec && IsTlsFailure(ec)) {
    return Fatal(Status::Unavailable("rank zero refused this rank's TLS certificate: " +
                                     ec.message() + " (is it signed by rank zero's [tls] ca?)"));
  }
  if (ec) return Retry(NetError("wait for rank zero's answer", ec));
  Result<size_t> n = DecodeRendezvousLength(length);
  if (!n.ok()) return Fatal(n.status().WithContext(host + " is not a Strata rendezvous"));
  std::vector<uint8_t> payload(*n);
  ec = RunUntil(io, socket, deadline, [&](auto done) {
    read(asio::buffer(payload), [done](const asio::error_code& e, size_t) { done(e); });
  });
  if (ec) return Retry(NetError("read rank zero's answer", ec));
  Result<RendezvousMessage> m = DecodeRendezvousPayload(payload);
  if (!m.ok()) return Fatal(m.status().WithContext("rank zero's answer"));
  if (const auto* reject = std::get_if<RendezvousReject>(&*m)) {
    return Fatal(Status::InvalidArgument("rank zero refused rank " + std::to_string(rank.value) +
                                         ": " + reject->reason));
  }
  const auto* ticket = std::get_if<JoinTicket>(&*m);
  if (ticket == nullptr) return Fatal(Status::Corruption("rank zero answered with a hello"));
  if (ticket->world_size != world_size) {
    return Fatal(Status::InvalidArgument(
        "rank " + std::to_string(rank.value) + " has world size " + std::to_string(world_size) +
        " but rank zero has world size " + std::to_string(ticket->world_size)));
  }
  return {*ticket, Status::Ok(), false};
}

}  // namespace

TcpRendezvousClient::TcpRendezvousClient(std::string master_addr, uint16_t master_port,
                                         TcpRendezvousLimits limits, RetryObserver on_retry,
                                         std::shared_ptr<const wire::TlsContext> tls)
    : master_addr_(std::move(master_addr)),
      master_port_(master_port),
      limits_(limits),
      on_retry_(std::move(on_retry)),
      tls_(std::move(tls)) {}

Result<JoinTicket> TcpRendezvousClient::Join(RankId rank, uint32_t world_size,
                                             RendezvousDeadline deadline) {
  const std::string where = master_addr_ + ":" + std::to_string(master_port_);
  std::chrono::milliseconds backoff = limits_.retry_initial;
  Status last = Status::Unavailable("no attempt before the deadline");
  uint64_t attempts = 0;
  try {
    while (Clock::now() < deadline) {
      ++attempts;
      Attempt a =
          TryJoin(master_addr_, master_port_, rank, world_size, deadline, limits_, tls_.get());
      if (a.ticket.has_value()) return *a.ticket;
      if (!a.retry) return a.status;
      last = a.status;
      if (on_retry_) on_retry_(last);
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) break;
      std::this_thread::sleep_for(std::min(backoff, left));
      backoff = std::min(backoff * 2, limits_.retry_max);
    }
  } catch (const std::exception& e) {
    return Status::Internal(std::string("rendezvous join: ") + e.what());
  }
  return Status::Unavailable("rank " + std::to_string(rank.value) +
                             ": no rendezvous with rank zero at " + where + " by the deadline (" +
                             std::to_string(attempts) + " attempts; last: " + last.message() + ")");
}

}  // namespace strata
