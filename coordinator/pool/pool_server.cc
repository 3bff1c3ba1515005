#include "coordinator/pool/pool_server.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <optional>
#include <vector>

#include "coordinator/pool/named_arena.h"
#include "coordinator/pool/pool_socket.h"

namespace strata::pool {
namespace {

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

Status SetSendBound(int fd) {
  timeval tv{.tv_sec = PoolServer::kSendBoundMs / 1000,
             .tv_usec = (PoolServer::kSendBoundMs % 1000) * 1000};
  if (::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    return Status::FromErrno(errno, "setsockopt SO_SNDTIMEO");
  }
  return Status::Ok();
}

}  // namespace

// The thread's state: nothing here is touched from another thread.
struct PoolServer::Loop {
  struct Connection {
    explicit Connection(wire::UniqueFd fd) : socket(std::move(fd)) {}
    PoolSocket socket;
    std::optional<SessionId> session;
  };

  Loop(const PoolServerOptions& options, const ManagerIdentity& identity, const Arena& arena,
       wire::UniqueFd listener, int wake, StatsBox& stats)
      : identity(identity),
        arena(arena),
        listener(std::move(listener)),
        wake(wake),
        catalog(CatalogLimits{.slot_count = arena.slot_count(),
                              .slot_bytes = arena.slot_bytes(),
                              .claims_in_flight_max = options.claims_in_flight_max,
                              .claim_setup_limit_ms = options.claim_setup_limit_ms}),
        connections_max(options.connections_max),
        stats(stats) {}

  void Run();
  void Accept();
  // Reads and answers what a connection sent; false when it must close.
  bool Serve(Connection& c);
  bool Handle(Connection& c, PoolReceived received);
  void Close(int fd);
  // Copies the counts out for PoolServer::Stats.
  void Publish();

  const ManagerIdentity& identity;
  const Arena& arena;
  wire::UniqueFd listener;
  int wake;
  PoolCatalog catalog;
  uint32_t connections_max;
  std::map<int, std::unique_ptr<Connection>> connections;
  StatsBox& stats;
  PoolTraffic traffic;
};

void PoolServer::Loop::Publish() {
  PoolManagerStats s;
  s.traffic = traffic;
  s.catalog = catalog.counts();
  s.slots_total = catalog.slots().slot_count();
  s.slots_free = catalog.slots().free_count();
  s.slots_retired_held = catalog.slots().retired_held_count();
  s.connections = connections.size();
  MutexLock lock(stats.mu);
  stats.stats = std::move(s);
}

void PoolServer::Loop::Run() {
  uint64_t last_sweep_ms = NowMs();
  while (true) {
    std::vector<pollfd> fds{{wake, POLLIN, 0}, {listener.get(), POLLIN, 0}};
    for (const auto& [fd, c] : connections) fds.push_back({fd, POLLIN, 0});
    (void)::poll(fds.data(), fds.size(), kClaimSweepMs);
    if ((fds[0].revents & POLLIN) != 0) break;
    if ((fds[1].revents & POLLIN) != 0) Accept();
    for (size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto it = connections.find(fds[i].fd);
      if (it != connections.end() && !Serve(*it->second)) Close(fds[i].fd);
    }
    const uint64_t now = NowMs();
    if (now - last_sweep_ms >= static_cast<uint64_t>(kClaimSweepMs)) {
      for (const FailedClaim& f : catalog.ExpireClaims(now)) {
        spdlog::warn("pool: claim {} of session {} failed: {}", f.claim.value, f.session.value,
                     ClaimHealthName(f.why));
      }
      last_sweep_ms = now;
      Publish();
    }
  }
  while (!connections.empty()) Close(connections.begin()->first);
}

void PoolServer::Loop::Accept() {
  while (true) {
    wire::UniqueFd fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd.valid()) return;  // EAGAIN: none left
    if (connections.size() >= connections_max || !SetSendBound(fd.get()).ok()) continue;
    const int raw = fd.get();
    connections.emplace(raw, std::make_unique<Connection>(std::move(fd)));
  }
}

bool PoolServer::Loop::Serve(Connection& c) {
  while (true) {
    Result<std::optional<PoolReceived>> r = c.socket.TryReceive();
    if (!r.ok()) {
      if (r.status().code() != StatusCode::kUnavailable) {
        spdlog::warn("pool: dropping a connection: {}", r.status().ToString());
      }
      return false;
    }
    if (!r->has_value()) return true;
    if (!Handle(c, std::move(**r))) return false;
  }
}

bool PoolServer::Loop::Handle(Connection& c, PoolReceived received) {
  const uint64_t now = NowMs();
  if (!c.session.has_value()) {
    const auto* hello = std::get_if<PoolHello>(&received.message);
    if (hello == nullptr) return false;  // anything before Hello closes the link
    auto outcome = AcceptHello(catalog, identity, *hello, now);
    if (auto* reject = std::get_if<PoolHelloReject>(&outcome)) {
      spdlog::warn("pool: rejected a Hello: {}", reject->reason);
      (void)c.socket.Send(*reject);
      return false;
    }
    auto& accepted = std::get<HelloAccepted>(outcome);
    c.session = accepted.session;
    const int arena_fd = arena.fd();
    return c.socket.Send(accepted.accept, std::span<const int>(&arena_fd, 1)).ok();
  }
  std::optional<PoolMessage> answer = AnswerRequest(catalog, *c.session, received.message, now);
  if (!answer.has_value()) return false;
  CountExchange(traffic, received.message, *answer);
  Publish();
  return c.socket.Send(*answer).ok();
}

void PoolServer::Loop::Close(int fd) {
  auto it = connections.find(fd);
  if (it == connections.end()) return;
  if (it->second->session.has_value()) {
    // NotFound: the instance reconnected and its new session replaced this one.
    (void)catalog.EndSession(*it->second->session);
  }
  connections.erase(it);
}

Result<std::unique_ptr<PoolServer>> PoolServer::Start(const PoolServerOptions& options,
                                                      uint64_t generation) {
  if (options.name.empty()) return Status::InvalidArgument("a pool needs a --name");
  NamedArena opened;
  if (options.arena_path.empty()) {
    STRATA_ASSIGN_OR_RETURN(opened.arena,
                            Arena::Create("strata-pool-" + options.name, options.slot_bytes,
                                          options.slot_count, options.huge_pages));
    opened.generation = generation;
  } else {
    STRATA_ASSIGN_OR_RETURN(opened, OpenNamedArena(options.arena_path, options.slot_bytes,
                                                   options.slot_count, generation));
  }
  STRATA_ASSIGN_OR_RETURN(wire::UniqueFd listener, ListenUnix(options.socket_path));
  wire::UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) return Status::FromErrno(errno, "eventfd");
  return std::unique_ptr<PoolServer>(new PoolServer(options, std::move(opened.arena),
                                                    opened.reopened, std::move(listener),
                                                    std::move(wake), opened.generation));
}

PoolServer::PoolServer(const PoolServerOptions& options, std::unique_ptr<Arena> arena,
                       bool reopened, wire::UniqueFd listener, wire::UniqueFd wake,
                       uint64_t generation)
    : options_(options),
      identity_{.pool_name = options.name,
                .generation = generation,
                .slot_bytes = arena->slot_bytes(),
                .slot_count = arena->slot_count()},
      arena_(std::move(arena)),
      reopened_(reopened),
      wake_(std::move(wake)),
      loop_(std::make_unique<Loop>(options_, identity_, *arena_, std::move(listener), wake_.get(),
                                   stats_)) {
  loop_->Publish();
  thread_ = std::thread([this] { loop_->Run(); });
}

PoolServer::~PoolServer() { Stop(); }

PoolManagerStats PoolServer::Stats() const {
  MutexLock lock(stats_.mu);
  return stats_.stats;
}

void PoolServer::Stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
  thread_.join();
  (void)::unlink(options_.socket_path.c_str());
}

}  // namespace strata::pool
