// HttpEndpoint: one rank's GET /metrics (Prometheus text), /healthz (200 "ok"
// or 503 with the reason) and /status (JSON) on its own threads. It reads
// only the snapshots its source returns, never live store state.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "launch/ops/ops_snapshot.h"
#include "store/base/status.h"

namespace strata {

struct HttpEndpointOptions {
  std::string bind = "0.0.0.0";  // address to listen on
  uint16_t port = 0;             // 0: an ephemeral port (see HttpEndpoint::port)
  // /healthz fails when the newest snapshot is older than this.
  std::chrono::milliseconds stale_after{std::chrono::seconds(30)};
  // Requests served at once; more wait in the listen backlog.
  size_t worker_threads = 2;
  // A request that sends or reads nothing for this long is dropped.
  std::chrono::seconds io_timeout{5};
};

// Returns the newest snapshot, or null before the first; called from the
// endpoint's worker threads (SnapshotPublisher::Latest fits).
using SnapshotSource = std::function<std::shared_ptr<const OpsSnapshot>()>;

class HttpEndpoint {
 public:
  // Binds at once (so the port is known and a busy port fails here) and
  // serves on a thread of its own until destroyed.
  static Result<std::unique_ptr<HttpEndpoint>> Start(const HttpEndpointOptions& options,
                                                     const SnapshotSource& source);
  // Stops serving and joins its threads.
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  // The bound port (the ephemeral one when options.port was 0).
  uint16_t port() const;

 private:
  struct Impl;
  explicit HttpEndpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
