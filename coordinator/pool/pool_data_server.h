// PoolDataServer: the manager's side of the TCP data channel (docs/pool.md,
// "The data channel"). Each data connection the manager's thread accepted
// (its DataHello proven and its session's token matched) is served on a
// thread of its own, so a window crossing a slow network never holds the
// manager's loop: a SlotWrite's window is read whole, then written into the
// put's slot (SessionGrants::Write) and answered `done`; a SlotRead is
// resolved against the session's claims and answered SlotData with the
// window sent straight from the arena. A refused window is answered with its
// status; a bad frame, or a window that does not arrive within
// kWindowBoundMs, ends the connection.
//
// Thread: Serve, EndSession and Counts from the manager's thread (Counts
// from any); the connections on their own.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <thread>

#include "coordinator/pool/data_stream.h"
#include "coordinator/pool/pool_traffic.h"
#include "coordinator/pool/session_grants.h"
#include "store/base/mutex.h"

namespace strata::pool {

class PoolDataServer {
 public:
  // A window's bytes (after its frame) or an answer's send must finish this soon.
  static constexpr int kWindowBoundMs = 10'000;

  explicit PoolDataServer(SessionGrants& grants) : grants_(grants) {}
  // Shuts every connection down and joins their threads.
  ~PoolDataServer();
  PoolDataServer(const PoolDataServer&) = delete;
  PoolDataServer& operator=(const PoolDataServer&) = delete;

  // A session's data connections at once (an instance opens two).
  static constexpr size_t kConnectionsPerSessionMax = 4;

  // Serves `stream` as a data connection of `session` until it ends; false
  // (the stream closed) when the session has kConnectionsPerSessionMax
  // connections open already, or no thread could start.
  bool Serve(SessionId session, std::unique_ptr<DataStream> stream);
  // Shuts down every data connection of `session` (their threads end soon).
  void EndSession(SessionId session);
  // Joins the threads of connections that ended (the manager's sweep).
  void Reap();
  // The session's data connections still open.
  size_t Live(SessionId session) const;
  PoolDataCounts Counts() const;

 private:
  struct Connection {
    SessionId session;
    std::shared_ptr<DataStream> stream;
    std::thread thread;
    std::atomic<bool> finished{false};
  };
  // The loop of one connection, on its thread.
  void Run(SessionId session, DataStream& stream);

  SessionGrants& grants_;
  std::list<Connection> connections_;  // the manager's thread's
  mutable Mutex mu_;
  PoolDataCounts counts_ GUARDED_BY(mu_);
};

}  // namespace strata::pool
