// The TCP rendezvous `strata rank` runs: rank zero listens at
// master_addr:master_port; every peer dials it, retrying until its deadline
// because rank zero may start later, reads rank zero's fresh challenge, sends
// a hello (rank, world size, and HMAC proof of the job secret over the
// challenge and those fields) and waits for its ticket, which rank zero sends
// once every rank has joined. A hello that is unproven (another secret) or
// inadmissible (a world size that differs, rank 0, out of range, a rank
// already admitted) is refused on its own connection, counted and reported;
// the rendezvous keeps waiting for the real peer (docs/wire.md: a stray or
// stale process cannot stop a healthy cluster). The first proven, admissible
// hello for a rank wins.
// Messages: coordinator/rendezvous/rendezvous_protocol.h. Asio stays inside the .cc.
// With a TlsContext both sides speak mutual TLS 1.3 (wire/tls.h) before the
// first frame; rank zero refuses, counts and reports a failed handshake.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "coordinator/rendezvous/job_secret.h"
#include "coordinator/rendezvous/rendezvous.h"
#include "wire/tls.h"

namespace strata {

// Named bounds on every wait and retry.
struct TcpRendezvousLimits {
  // A connection that sends no complete hello within this is closed.
  std::chrono::milliseconds hello_timeout{std::chrono::seconds(10)};
  // Connections rank zero holds at once (joined or not); more are closed.
  size_t connections_max = 1024;
  // A peer's single connect attempt gives up after this.
  std::chrono::milliseconds connect_attempt_timeout{std::chrono::seconds(5)};
  // Writing one frame gives up after this.
  std::chrono::milliseconds write_timeout{std::chrono::seconds(5)};
  // A peer waits this long after a failed attempt, doubling up to retry_max.
  std::chrono::milliseconds retry_initial{std::chrono::milliseconds(50)};
  std::chrono::milliseconds retry_max{std::chrono::seconds(1)};
};

// Counted connection-level problems on rank zero (none fails the rendezvous).
struct TcpRendezvousStats {
  uint64_t connections = 0;             // accepted
  uint64_t refused_over_limit = 0;      // closed at once: connections_max reached
  uint64_t bad_frames = 0;              // malformed, oversized or wrong-version frames
  uint64_t hellos_unproven = 0;         // proof of another job secret (or none)
  uint64_t hellos_refused = 0;          // proven, but wrong world size, rank 0, out of range,
                                        // or a rank already admitted
  uint64_t hello_timeouts = 0;          // no hello within hello_timeout
  uint64_t withdrawn = 0;               // joined, then disconnected before tickets
  uint64_t tls_handshake_failures = 0;  // plaintext or foreign peers (TLS only)
};

// Rank zero's side. Not thread-safe: one thread calls AwaitPeers.
class TcpRendezvousServer final : public RendezvousServer {
 public:
  // Called with each connection-level problem (a bad frame, a timeout); for
  // logging. Runs on the AwaitPeers thread.
  using ProblemObserver = std::function<void(const Status&)>;

  // Binds and listens on `address` (an IP or a host name resolving to one of
  // this host's addresses) and `port` (0: ephemeral) at once, so peers that
  // connect before AwaitPeers wait in the backlog. Every hello must prove
  // `secret`; `nonces` gives the join nonces and each connection's challenge.
  static Result<std::unique_ptr<TcpRendezvousServer>> Listen(
      const std::string& address, uint16_t port, JobSecret secret, NonceSource nonces,
      TcpRendezvousLimits limits = {}, ProblemObserver on_problem = {},
      std::shared_ptr<const wire::TlsContext> tls = nullptr);
  ~TcpRendezvousServer() override;
  TcpRendezvousServer(const TcpRendezvousServer&) = delete;
  TcpRendezvousServer& operator=(const TcpRendezvousServer&) = delete;

  // The bound port.
  uint16_t port() const;
  // The bound numeric address (master_addr resolved): where peers reach
  // rank zero, so the record listener's default bind.
  std::string address() const;
  // Ticket's record_host for each peer: the local address of that peer's
  // rendezvous connection. The listener closes when AwaitPeers returns.
  // Refused hellos do not fail it; at the deadline the message names the
  // missing ranks and the last refusal.
  Result<PeerTable> AwaitPeers(uint32_t world_size, uint16_t record_port,
                               RendezvousDeadline deadline) override;
  const TcpRendezvousStats& stats() const;

 private:
  struct Impl;
  explicit TcpRendezvousServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A peer's side. Join may be called from any one thread at a time.
class TcpRendezvousClient final : public RendezvousClient {
 public:
  // Called after each failed attempt that will be retried (rank zero not
  // listening yet, connection reset); for logging progress.
  using RetryObserver = std::function<void(const Status&)>;

  // A TLS failure (rank zero's certificate, or rank zero refusing ours) is
  // not retried. Every hello proves `secret`.
  TcpRendezvousClient(std::string master_addr, uint16_t master_port, JobSecret secret,
                      TcpRendezvousLimits limits = {}, RetryObserver on_retry = {},
                      std::shared_ptr<const wire::TlsContext> tls = nullptr);

  // Retries connecting until `deadline`; fails at once on rank zero's
  // refusal (another job secret, a world size that differs, a rank taken),
  // or a reply that is not the protocol.
  Result<JoinTicket> Join(RankId rank, uint32_t world_size, RendezvousDeadline deadline) override;
  // Makes a Join under way, and every later one, end with kAborted within
  // about 50 ms (a rank asked to stop before rank zero answered).
  // Thread-safe.
  void Cancel();

 private:
  static Status Cancelled(RankId rank);

  std::string master_addr_;
  uint16_t master_port_;
  JobSecret secret_;
  TcpRendezvousLimits limits_;
  RetryObserver on_retry_;
  std::shared_ptr<const wire::TlsContext> tls_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace strata
