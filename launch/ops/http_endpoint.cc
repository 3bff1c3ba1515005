#include "launch/ops/http_endpoint.h"

#include <httplib.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "launch/ops/metrics.h"
#include "launch/ops/status_json.h"

namespace strata {

namespace {

// How long the destructor waits for the server loop to start before it can
// be stopped (httplib ignores stop() until then).
constexpr std::chrono::seconds kStartBound{10};
constexpr std::chrono::milliseconds kStartPoll{1};

}  // namespace

struct HttpEndpoint::Impl {
  httplib::Server server;
  std::thread thread;
  uint16_t port = 0;
};

HttpEndpoint::HttpEndpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpEndpoint::~HttpEndpoint() {
  const auto give_up = std::chrono::steady_clock::now() + kStartBound;
  while (!impl_->server.is_running() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(kStartPoll);
  }
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

uint16_t HttpEndpoint::port() const { return impl_->port; }

Result<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(const HttpEndpointOptions& options,
                                                          const SnapshotSource& source) {
  auto impl = std::make_unique<Impl>();
  httplib::Server& server = impl->server;
  const size_t workers = std::max<size_t>(1, options.worker_threads);
  server.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  server.set_read_timeout(options.io_timeout);
  server.set_write_timeout(options.io_timeout);
  server.set_payload_max_length(4096);  // GET only: no request body is needed
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, which would
  // let two ranks bind one port and split its scrapes between them.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });

  const std::chrono::milliseconds stale_after = options.stale_after;
  server.Get("/metrics", [source, stale_after](const httplib::Request&, httplib::Response& res) {
    std::shared_ptr<const OpsSnapshot> snap = source();
    if (snap == nullptr) {
      res.status = 503;
      res.set_content("starting: no state published yet\n", "text/plain");
      return;
    }
    Health h = EvaluateHealth(snap.get(), std::chrono::steady_clock::now(), stale_after);
    res.set_content(RenderMetrics(*snap, h), kPrometheusContentType);
  });
  server.Get("/healthz", [source, stale_after](const httplib::Request&, httplib::Response& res) {
    std::shared_ptr<const OpsSnapshot> snap = source();
    Health h = EvaluateHealth(snap.get(), std::chrono::steady_clock::now(), stale_after);
    res.status = h.ok ? 200 : 503;
    res.set_content(h.reason + "\n", "text/plain");
  });
  server.Get("/status", [source, stale_after](const httplib::Request&, httplib::Response& res) {
    std::shared_ptr<const OpsSnapshot> snap = source();
    Health h = EvaluateHealth(snap.get(), std::chrono::steady_clock::now(), stale_after);
    if (snap == nullptr) res.status = 503;
    res.set_content(RenderStatusJson(snap.get(), h), "application/json");
  });

  errno = 0;
  int port = options.port;
  if (options.port == 0) {
    port = server.bind_to_any_port(options.bind);
  } else if (!server.bind_to_port(options.bind, options.port)) {
    port = -1;
  }
  if (port <= 0) {
    const int err = errno;
    return Status::IoError("metrics endpoint: cannot listen on " + options.bind + ":" +
                           std::to_string(options.port) +
                           (err != 0 ? std::string(": ") + std::strerror(err) : std::string()));
  }
  impl->port = static_cast<uint16_t>(port);
  impl->thread = std::thread([&server] { server.listen_after_bind(); });
  return std::unique_ptr<HttpEndpoint>(new HttpEndpoint(std::move(impl)));
}

}  // namespace strata
