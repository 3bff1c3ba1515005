// PoolServer: the `strata pool` manager process's service. Owns the arena and
// the catalog and serves instances on a Unix socket: one thread polls the
// listener and every connection, answers each frame (pool_dispatch.h), and
// fails stalled claims (PoolCatalog::ExpireClaims) at least every
// kClaimSweepMs. A connection that ends, or sends what it may not, ends its
// session. All state belongs to that thread; Stop() is the only way in.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "coordinator/pool/arena.h"
#include "coordinator/pool/pool_catalog.h"
#include "coordinator/pool/pool_data_server.h"
#include "coordinator/pool/pool_dispatch.h"
#include "coordinator/pool/pool_traffic.h"
#include "coordinator/rendezvous/job_secret.h"
#include "coordinator/rendezvous/nonce.h"
#include "store/base/mutex.h"
#include "wire/tls.h"
#include "wire/unique_fd.h"

namespace strata::pool {

struct PoolServerOptions {
  std::string name;                  // --name: salts scopes and instance ids
  std::string socket_path;           // --socket: the Unix control socket
  uint64_t slot_bytes = 2ull << 20;  // one record slot (2 MiB: a huge page)
  uint32_t slot_count = 512;         // 1 GiB of arena by default
  uint32_t claims_in_flight_max = 16;
  uint64_t claim_setup_limit_ms = kManagerSetupLimitMsDefault;
  uint32_t connections_max = 256;  // more are accepted and closed at once
  // TCP connections without a session at once; a new one beyond closes the
  // oldest (hellos_rejected{"crowded_out"}), so strangers on the TCP address
  // can neither hold the slots the Unix socket's instances need nor keep a
  // proven instance out for long.
  uint32_t tcp_sessionless_max = 32;
  HugePages huge_pages = HugePages::kIfAvailable;
  // --arena-file: a named arena (named_arena.h) that a restarted manager
  // reopens under the same generation, and that instances over TCP on this
  // host map by its path; empty: an anonymous memfd (then TCP instances use
  // the data channel).
  std::string arena_path;
  // --tcp HOST:PORT: also listen on TCP (port 0: the kernel picks one;
  // tcp_port() says which). Needs `job_secret` (every TCP Hello, and every
  // data connection's DataHello, proves it over the connection's Challenge:
  // pool_hello_proof.h). An instance over TCP either maps the named arena by
  // its path (on this host) or asks for the data channel (any host; its
  // records then move through data connections: pool_data_server.h).
  // Empty: none.
  std::string tcp_host;
  uint16_t tcp_port = 0;
  std::optional<JobSecret> job_secret;
  // --tls-cert/--tls-key/--tls-ca: every TCP connection is mutual TLS (the
  // record links' rules, wire/tls.h) before its Challenge; null: plaintext.
  std::shared_ptr<const wire::TlsContext> tls;
  // Draws each TCP connection's challenge; unset: the OS's random source.
  NonceSource nonces;
  // A connection without a session this long after it was accepted (no
  // Hello, or one still unanswered) is closed, so strangers cannot hold the
  // connection slots (counted as hellos_rejected{"no_hello"}).
  uint64_t hello_bound_ms = 10'000;
};

class PoolServer {
 public:
  // The sweep period of stalled claims, and the poll bound.
  static constexpr int kClaimSweepMs = 100;
  // A connection that blocks a send this long is dropped.
  static constexpr int kSendBoundMs = 1'000;

  // Creates the arena, listens and starts the thread. `generation` names this
  // manager's arena to its instances (chosen by the caller, e.g. at random);
  // a named arena reopened with its sizes keeps its own (generation()).
  static Result<std::unique_ptr<PoolServer>> Start(const PoolServerOptions& options,
                                                   uint64_t generation);
  ~PoolServer();  // Stop()
  PoolServer(const PoolServer&) = delete;
  PoolServer& operator=(const PoolServer&) = delete;

  // Ends every session, closes the socket and joins the thread. Idempotent.
  void Stop();

  const ManagerIdentity& identity() const { return identity_; }
  // The TCP port it listens on; 0 without a TCP address.
  uint16_t tcp_port() const { return tcp_port_; }
  // The newest counts the manager's thread published (after every exchange
  // and every claim sweep). Thread-safe.
  PoolManagerStats Stats() const;
  PageKind page_kind() const { return arena_->page_kind(); }
  uint64_t generation() const { return identity_.generation; }
  // Whether the named arena was reopened (the last manager's memory and generation).
  bool reopened() const { return reopened_; }

 private:
  struct Loop;
  // The sockets Start opened: the Unix one, and TCP's (invalid: none).
  struct Listeners {
    wire::UniqueFd unix_socket;
    wire::UniqueFd tcp;
    uint16_t tcp_port = 0;
  };
  PoolServer(const PoolServerOptions& options, std::unique_ptr<Arena> arena, bool reopened,
             Listeners listeners, wire::UniqueFd wake, uint64_t generation);

  PoolServerOptions options_;
  ManagerIdentity identity_;
  std::unique_ptr<Arena> arena_;
  // The data channel's: what its sessions may touch, and its connections
  // (after arena_: their threads end before it is unmapped).
  std::unique_ptr<SessionGrants> grants_;
  std::unique_ptr<PoolDataServer> data_;
  bool reopened_ = false;
  uint16_t tcp_port_ = 0;
  wire::UniqueFd wake_;  // an eventfd: Stop() writes it
  struct StatsBox {
    mutable Mutex mu;
    PoolManagerStats stats GUARDED_BY(mu);
  };
  StatsBox stats_;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

}  // namespace strata::pool
