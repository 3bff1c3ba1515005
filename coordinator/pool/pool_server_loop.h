// PoolServer's loop state (pool_server.h): private to the server's .cc
// files (pool_server.cc, pool_server_exports.cc). Everything here belongs to
// the manager's one thread.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/pool/export_relay.h"
#include "coordinator/pool/pool_server.h"
#include "coordinator/pool/pool_socket.h"

namespace strata::pool {

// The thread's state: nothing here is touched from another thread.
struct PoolServer::Loop {
  struct Connection {
    explicit Connection(wire::UniqueFd fd) : socket(std::move(fd)) {}
    PoolSocket socket;
    std::optional<SessionId> session;
    // Over TCP, the nonce its Hello must prove the job secret over.
    std::optional<Nonce> challenge;
    // Over TCP with TLS, until its handshake is done (then the socket's).
    std::unique_ptr<wire::TlsSession> handshaking;
    uint64_t accepted_ms = 0;
  };

  // A session whose records move through data connections.
  struct DataSession {
    InstanceId instance{};
    DataToken token{};
  };

  Loop(const PoolServerOptions& options, const ManagerIdentity& identity, const Arena& arena,
       Listeners listeners, int wake, StatsBox& stats, SessionGrants& grants, PoolDataServer& data)
      : identity(identity),
        arena(arena),
        grants(grants),
        data(data),
        listener(std::move(listeners.unix_socket)),
        tcp_listener(std::move(listeners.tcp)),
        job_secret(options.job_secret),
        nonces(options.nonces ? options.nonces : OsNonceSource()),
        arena_path(options.arena_path),
        hello_bound_ms(options.hello_bound_ms),
        tcp_sessionless_max(options.tcp_sessionless_max),
        tls(options.tls),
        wake(wake),
        relay(options.claim_setup_limit_ms),
        catalog(CatalogLimits{.slot_count = arena.slot_count(),
                              .slot_bytes = arena.slot_bytes(),
                              .claims_in_flight_max = options.claims_in_flight_max,
                              .claim_setup_limit_ms = options.claim_setup_limit_ms}),
        connections_max(options.connections_max),
        stats(stats) {}

  void Run();
  // Takes every pending connection of `from`; a TCP one gets its Challenge.
  void Accept(int from, bool tcp);
  // Before a new TCP connection: closes the oldest TCP connections without a
  // session while tcp_sessionless_max of them are open.
  void CrowdOutSessionlessTcp();
  // Closes the connections still without a session hello_bound_ms after
  // they were accepted.
  void CloseSilentConnections(uint64_t now);
  // Answers a connection's Hello; false when it must close.
  bool AnswerHello(Connection& c, const PoolHello& hello, uint64_t now);
  // Answers a data connection's DataHello and hands its socket to the data
  // server; always false (the connection leaves this loop either way).
  bool AnswerDataHello(Connection& c, const PoolDataHello& hello);
  // Ends a data session's grants and connections (its control connection
  // ended, or a new session of its instance replaced it).
  void EndDataSession(SessionId session);
  // After a catalog change: data-channel puts whose record went (with a
  // parent) are no longer writable, before their slots can be granted again.
  void DropUnwritablePuts();
  // Reads and answers what a connection sent; false when it must close.
  bool Serve(Connection& c);
  bool Handle(Connection& c, PoolReceived received);
  // A claim that needs an export (export_relay.h): asks the holder, or
  // answers at once. False: no export, answer it as usual.
  bool BeginExport(Connection& c, const PoolClaim& claim, uint64_t now);
  // Sends the relay's answers to their requesters (a requester gone, or
  // whose send fails, is skipped: its connection's next read ends it).
  void SendRelayAnswers(std::vector<RelayAnswer> answers);
  // The connection of `session`; null when it has none (ended or replaced).
  Connection* SessionConnection(SessionId session);
  void Close(int fd);
  // Copies the counts out for PoolServer::Stats.
  void Publish();

  const ManagerIdentity& identity;
  const Arena& arena;
  SessionGrants& grants;
  PoolDataServer& data;
  std::map<uint64_t, DataSession> data_sessions;  // by SessionId
  wire::UniqueFd listener;
  wire::UniqueFd tcp_listener;  // invalid: no TCP address
  std::optional<JobSecret> job_secret;
  NonceSource nonces;
  std::string arena_path;
  uint64_t hello_bound_ms;
  uint32_t tcp_sessionless_max;
  uint64_t accept_paused_until_ms = 0;  // after an accept failed for want of fds
  std::shared_ptr<const wire::TlsContext> tls;
  int wake;
  ExportRelay relay;
  PoolCatalog catalog;
  uint32_t connections_max;
  std::map<int, std::unique_ptr<Connection>> connections;
  StatsBox& stats;
  PoolTraffic traffic;
};

}  // namespace strata::pool
