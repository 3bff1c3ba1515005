// TcpRendezvousClient: a peer's side of the TCP rendezvous
// (tcp_rendezvous.h); rank zero's side is in tcp_rendezvous_server.cc.
#include <asio.hpp>
#include <asio/ssl.hpp>
#include <atomic>
#include <optional>
#include <thread>

#include "coordinator/rendezvous/rendezvous_protocol.h"
#include "coordinator/rendezvous/tcp_rendezvous.h"
#include "coordinator/rendezvous/tcp_rendezvous_net.h"
#include "wire/tls_asio.h"

namespace strata {

namespace {

using rendezvous_net::Clock;
using rendezvous_net::NetError;
using rendezvous_net::tcp;

// How often a blocked attempt looks at the cancel flag.
constexpr auto kCancelPoll = std::chrono::milliseconds(50);

// Runs the one operation `start` begins until it completes, `limit`, or
// `cancelled`; asio::error::timed_out or operation_aborted (and the socket
// closed) when the operation did not complete.
template <typename Start>
asio::error_code RunUntil(asio::io_context& io, tcp::socket& socket, Clock::time_point limit,
                          const std::atomic<bool>& cancelled, Start start) {
  std::optional<asio::error_code> result;
  io.restart();
  start([&result](const asio::error_code& ec) { result = ec; });
  while (!result.has_value() && !cancelled.load() && Clock::now() < limit) {
    if (io.stopped()) io.restart();
    io.run_until(std::min(limit, Clock::now() + kCancelPoll));
  }
  if (result.has_value()) return *result;
  asio::error_code ignored;
  socket.close(ignored);
  io.restart();
  io.run();  // the aborted handler
  return cancelled.load() ? asio::error::operation_aborted : asio::error::timed_out;
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

// What one attempt works with, besides its socket.
struct JoinRequest {
  const std::string& host;
  uint16_t port;
  RankId rank;
  uint32_t world_size;
  const JobSecret& secret;
  Clock::time_point deadline;
  const TcpRendezvousLimits& limits;
  const wire::TlsContext* tls_context;  // null: plaintext
};

// One frame read before `limit`: an error on the socket, or the message
// (kCorruption/kInvalidArgument when it is not the protocol).
struct Received {
  asio::error_code ec;
  std::optional<Result<RendezvousMessage>> message;
};

template <typename Read>
Received ReceiveFrame(asio::io_context& io, tcp::socket& socket, Clock::time_point limit,
                      const std::atomic<bool>& cancelled, Read read) {
  std::array<uint8_t, kRendezvousLengthBytes> length{};
  Received r;
  r.ec = RunUntil(io, socket, limit, cancelled, [&](auto done) {
    read(asio::buffer(length), [done](const asio::error_code& e, size_t) { done(e); });
  });
  if (r.ec) return r;
  Result<size_t> n = DecodeRendezvousLength(length);
  if (!n.ok()) {
    r.message = n.status();
    return r;
  }
  std::vector<uint8_t> payload(*n);
  r.ec = RunUntil(io, socket, limit, cancelled, [&](auto done) {
    read(asio::buffer(payload), [done](const asio::error_code& e, size_t) { done(e); });
  });
  if (!r.ec) r.message = DecodeRendezvousPayload(payload);
  return r;
}

Attempt TryJoin(const JoinRequest& req, const std::atomic<bool>& cancelled) {
  const std::string& host = req.host;
  const RankId rank = req.rank;
  const Clock::time_point deadline = req.deadline;
  const TcpRendezvousLimits& limits = req.limits;
  asio::io_context io;
  tcp::resolver resolver(io);
  asio::error_code ec;
  const auto endpoints =
      resolver.resolve(host, std::to_string(req.port), tcp::resolver::numeric_service, ec);
  if (ec) return Retry(NetError("resolve " + host, ec));
  tcp::socket socket(io);
  const Clock::time_point now = Clock::now();
  ec = RunUntil(io, socket, std::min(deadline, now + limits.connect_attempt_timeout), cancelled,
                [&](auto done) {
                  asio::async_connect(
                      socket, endpoints,
                      [done](const asio::error_code& e, const tcp::endpoint&) { done(e); });
                });
  if (ec) return Retry(NetError("connect", ec));
  std::optional<asio::ssl::stream<tcp::socket&>> tls;
  if (req.tls_context != nullptr) {
    tls.emplace(socket, req.tls_context->impl().context());
    ec = RunUntil(io, socket, std::min(deadline, Clock::now() + limits.connect_attempt_timeout),
                  cancelled,
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
  // Rank zero challenges each connection once its AwaitPeers runs: wait up
  // to the deadline.
  Received challenge = ReceiveFrame(io, socket, deadline, cancelled, read);
  if (challenge.ec && IsTlsFailure(challenge.ec)) {
    return Fatal(Status::Unavailable(
        "rank zero refused this rank's TLS certificate: " + challenge.ec.message() +
        " (is it signed by rank zero's [tls] ca?)"));
  }
  if (challenge.ec) return Retry(NetError("wait for rank zero's challenge", challenge.ec));
  if (!challenge.message->ok()) {
    return Fatal(challenge.message->status().WithContext(host + " is not a Strata rendezvous"));
  }
  const auto* c = std::get_if<RendezvousChallenge>(&**challenge.message);
  if (c == nullptr) {
    return Fatal(Status::Corruption(host + " did not open with a rendezvous challenge"));
  }
  const std::vector<uint8_t> hello = EncodeRendezvousFrame(RendezvousHello{
      rank, req.world_size, ProveHello(req.secret, c->challenge, rank, req.world_size)});
  ec =
      RunUntil(io, socket, std::min(deadline, Clock::now() + limits.write_timeout), cancelled,
               [&](auto done) {
                 write(asio::buffer(hello), [done](const asio::error_code& e, size_t) { done(e); });
               });
  if (ec) return Retry(NetError("send hello", ec));
  // Rank zero answers once every rank has joined: wait up to the deadline.
  Received answer = ReceiveFrame(io, socket, deadline, cancelled, read);
  if (answer.ec) return Retry(NetError("wait for rank zero's answer", answer.ec));
  const Result<RendezvousMessage>& m = *answer.message;
  if (!m.ok()) return Fatal(m.status().WithContext("rank zero's answer"));
  if (const auto* reject = std::get_if<RendezvousReject>(&*m)) {
    return Fatal(Status::InvalidArgument("rank zero refused rank " + std::to_string(rank.value) +
                                         ": " + reject->reason));
  }
  const auto* ticket = std::get_if<JoinTicket>(&*m);
  if (ticket == nullptr) return Fatal(Status::Corruption("rank zero answered without a ticket"));
  if (ticket->world_size != req.world_size) {
    return Fatal(Status::InvalidArgument(
        "rank " + std::to_string(rank.value) + " has world size " + std::to_string(req.world_size) +
        " but rank zero has world size " + std::to_string(ticket->world_size)));
  }
  return {*ticket, Status::Ok(), false};
}

}  // namespace

TcpRendezvousClient::TcpRendezvousClient(std::string master_addr, uint16_t master_port,
                                         JobSecret secret, TcpRendezvousLimits limits,
                                         RetryObserver on_retry,
                                         std::shared_ptr<const wire::TlsContext> tls)
    : master_addr_(std::move(master_addr)),
      master_port_(master_port),
      secret_(std::move(secret)),
      limits_(limits),
      on_retry_(std::move(on_retry)),
      tls_(std::move(tls)) {}

void TcpRendezvousClient::Cancel() { cancelled_.store(true); }

Status TcpRendezvousClient::Cancelled(RankId rank) {
  return Status::Aborted("rank " + std::to_string(rank.value) + ": rendezvous join cancelled");
}

Result<JoinTicket> TcpRendezvousClient::Join(RankId rank, uint32_t world_size,
                                             RendezvousDeadline deadline) {
  const std::string where = master_addr_ + ":" + std::to_string(master_port_);
  std::chrono::milliseconds backoff = limits_.retry_initial;
  Status last = Status::Unavailable("no attempt before the deadline");
  uint64_t attempts = 0;
  try {
    while (Clock::now() < deadline) {
      if (cancelled_.load()) return Cancelled(rank);
      ++attempts;
      Attempt a = TryJoin({.host = master_addr_,
                           .port = master_port_,
                           .rank = rank,
                           .world_size = world_size,
                           .secret = secret_,
                           .deadline = deadline,
                           .limits = limits_,
                           .tls_context = tls_.get()},
                          cancelled_);
      if (a.ticket.has_value()) return *a.ticket;
      if (cancelled_.load()) return Cancelled(rank);
      if (!a.retry) return a.status;
      last = a.status;
      if (on_retry_) on_retry_(last);
      const Clock::time_point retry_at = std::min(deadline, Clock::now() + backoff);
      while (Clock::now() < retry_at && !cancelled_.load()) {
        std::this_thread::sleep_for(
            std::min<Clock::duration>(kCancelPoll, retry_at - Clock::now()));
      }
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
