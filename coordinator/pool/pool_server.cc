#include "coordinator/pool/pool_server.h"

#include <openssl/crypto.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "coordinator/pool/named_arena.h"
#include "coordinator/pool/pool_hello_proof.h"
#include "coordinator/pool/pool_server_loop.h"
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

void PoolServer::Loop::Publish() {
  PoolManagerStats s;
  s.traffic = traffic;
  s.catalog = catalog.counts();
  s.slots_total = catalog.slots().slot_count();
  s.slots_free = catalog.slots().free_count();
  s.slots_retired_held = catalog.slots().retired_held_count();
  s.connections = connections.size();
  s.exports = relay.counts();
  MutexLock lock(stats.mu);
  stats.stats = std::move(s);
}

void PoolServer::Loop::Run() {
  uint64_t last_sweep_ms = NowMs();
  while (true) {
    // A TCP listener that is not there polls fd -1: never ready.
    std::vector<pollfd> fds{
        {wake, POLLIN, 0},
        {NowMs() < accept_paused_until_ms ? -1 : listener.get(), POLLIN, 0},
        {NowMs() < accept_paused_until_ms ? -1 : tcp_listener.get(), POLLIN, 0}};
    for (const auto& [fd, c] : connections) {
      // A TLS handshake may wait to write (its socket buffer full).
      const bool writes = c->handshaking != nullptr && c->handshaking->WantsWrite();
      fds.push_back({fd, static_cast<short>(POLLIN | (writes ? POLLOUT : 0)), 0});
    }
    (void)::poll(fds.data(), fds.size(), kClaimSweepMs);
    if ((fds[0].revents & POLLIN) != 0) break;
    if ((fds[1].revents & POLLIN) != 0) Accept(listener.get(), false);
    if ((fds[2].revents & POLLIN) != 0) Accept(tcp_listener.get(), true);
    for (size_t i = 3; i < fds.size(); ++i) {
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
      SendRelayAnswers(relay.Expire(now));
      CloseSilentConnections(now);
      data.Reap();
      last_sweep_ms = now;
      Publish();
    }
  }
  while (!connections.empty()) Close(connections.begin()->first);
}

void PoolServer::Loop::Accept(int from, bool tcp) {
  while (true) {
    wire::UniqueFd fd(::accept4(from, nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd.valid()) {
      // EAGAIN: none left. Anything else (out of fds, memory) leaves the
      // listener readable: pause accepting for a sweep instead of spinning.
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
        spdlog::warn("pool: accepting a connection failed: {}; pausing accepts for {} ms",
                     std::strerror(errno), kClaimSweepMs);
        accept_paused_until_ms = NowMs() + kClaimSweepMs;
      }
      return;
    }
    if (connections.size() >= connections_max || !SetSendBound(fd.get()).ok()) continue;
    auto c = std::make_unique<Connection>(std::move(fd));
    c->accepted_ms = NowMs();
    c->socket.set_frame_bytes_max(kPoolHelloFrameBytesMax);  // raised at the session
    if (tcp) {
      CrowdOutSessionlessTcp();
      Result<Nonce> nonce = nonces();
      if (!nonce.ok() || !SetNoDelay(c->socket.fd()).ok()) continue;
      c->challenge = *nonce;
      if (tls != nullptr) {
        // The Challenge follows the handshake (Serve), which the peer drives.
        if (!SetNonBlocking(c->socket.fd()).ok()) continue;
        Result<std::unique_ptr<wire::TlsSession>> session = wire::TlsSession::Start(
            tls, c->socket.fd(), wire::TlsSide::kServer, std::chrono::milliseconds(kSendBoundMs));
        if (!session.ok()) continue;
        c->handshaking = std::move(*session);
      } else if (!c->socket.Send(PoolChallenge{.nonce = *nonce}).ok()) {
        continue;
      }
    }
    const int raw = c->socket.fd();
    connections.emplace(raw, std::move(c));
  }
}

bool PoolServer::Loop::Serve(Connection& c) {
  if (c.handshaking != nullptr) {
    Result<bool> done = c.handshaking->Handshake();
    if (!done.ok()) {
      spdlog::warn("pool: a TCP connection failed its TLS handshake: {}", done.status().ToString());
      ++traffic.hellos_rejected["tls"];
      Publish();
      return false;
    }
    if (!*done) return true;
    c.socket.UseTls(std::move(c.handshaking));
    if (!c.socket.Send(PoolChallenge{.nonce = *c.challenge}).ok()) return false;
  }
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
    if (const auto* data_hello = std::get_if<PoolDataHello>(&received.message)) {
      return AnswerDataHello(c, *data_hello);
    }
    const auto* hello = std::get_if<PoolHello>(&received.message);
    if (hello == nullptr) return false;  // anything before Hello closes the link
    return AnswerHello(c, *hello, now);
  }
  if (const auto* claim = std::get_if<PoolClaim>(&received.message)) {
    if (BeginExport(c, *claim, now)) return true;
  }
  std::optional<PoolMessage> answer = AnswerRequest(catalog, *c.session, received.message, now);
  if (!answer.has_value()) return false;
  // Before the answer leaves: its grant is writable once the instance reads it.
  if (data_sessions.contains(c.session->value)) grants.Note(*c.session, received.message, *answer);
  DropUnwritablePuts();
  CountExchange(traffic, received.message, *answer);
  Publish();
  const bool sent = c.socket.Send(*answer).ok();
  // A holder's commit or abort ends its export: the waiting claims' answers
  // (whether or not the holder's own answer reached it).
  const auto* done = std::get_if<PoolDone>(&*answer);
  if (const auto* commit = std::get_if<PoolCommit>(&received.message)) {
    const auto how =
        done->status.ok() ? ExportRelay::Ended::kCommitted : ExportRelay::Ended::kCommitFailed;
    SendRelayAnswers(relay.PutEnded(catalog, *c.session, commit->put, how, now));
  } else if (const auto* abort = std::get_if<PoolAbort>(&received.message)) {
    SendRelayAnswers(
        relay.PutEnded(catalog, *c.session, abort->put, ExportRelay::Ended::kAborted, now));
  }
  return sent;
}

void PoolServer::Loop::CrowdOutSessionlessTcp() {
  for (;;) {
    int oldest = -1;
    uint64_t oldest_ms = UINT64_MAX;
    uint32_t count = 0;
    for (const auto& [fd, c] : connections) {
      if (c->session || !c->challenge) continue;
      ++count;
      if (c->accepted_ms < oldest_ms) {
        oldest_ms = c->accepted_ms;
        oldest = fd;
      }
    }
    if (count < tcp_sessionless_max || oldest < 0) return;
    ++traffic.hellos_rejected["crowded_out"];
    Close(oldest);
  }
}

void PoolServer::Loop::CloseSilentConnections(uint64_t now) {
  std::vector<int> silent;
  for (const auto& [fd, c] : connections) {
    if (!c->session && now - c->accepted_ms >= hello_bound_ms) silent.push_back(fd);
  }
  for (int fd : silent) {
    spdlog::warn("pool: closing a connection that sent no Hello within {} ms", hello_bound_ms);
    ++traffic.hellos_rejected["no_hello"];
    Close(fd);
  }
}

bool PoolServer::Loop::AnswerHello(Connection& c, const PoolHello& hello, uint64_t now) {
  auto reject = [&](const char* reason, PoolHelloReject message) {
    spdlog::warn("pool: rejected a Hello: {}", message.reason);
    ++traffic.hellos_rejected[reason];
    Publish();
    (void)c.socket.Send(message);
    return false;
  };
  if (c.challenge && (!hello.client_nonce || !PoolHelloProven(*job_secret, *c.challenge, hello))) {
    return reject("job_secret",
                  {"the Hello does not prove this job's secret (the instance needs the same "
                   "--job-secret-file or STRATA_JOB_SECRET as the manager)"});
  }
  const bool data_channel = c.challenge.has_value() && hello.data_channel;
  if (c.challenge && !data_channel && arena_path.empty()) {
    return reject("no_arena_file",
                  {"this manager has no --arena-file: over TCP it serves instances through the "
                   "data channel only"});
  }
  std::optional<Nonce> token;
  if (data_channel) {
    Result<Nonce> drawn = nonces();
    if (!drawn.ok()) return reject("refused", {"no data token: " + drawn.status().ToString()});
    token = *drawn;
  }
  auto outcome = AcceptHello(catalog, identity, hello, now);
  if (auto* refused = std::get_if<PoolHelloReject>(&outcome)) {
    return reject("refused", std::move(*refused));
  }
  auto& accepted = std::get<HelloAccepted>(outcome);
  // A session of the same instance this one replaced (its puts aborted): no
  // window of it may land in slots the new session's puts are granted.
  std::vector<SessionId> replaced;
  for (const auto& [session, d] : data_sessions) {
    if (d.instance == accepted.accept.instance) replaced.emplace_back(session);
  }
  for (SessionId session : replaced) EndDataSession(session);
  DropUnwritablePuts();  // the replaced session's own records went
  // Its exports' claims fail now, not when its connection closes.
  for (const auto& [fd, other] : connections) {
    if (other->session && !catalog.HasSession(*other->session)) {
      SendRelayAnswers(relay.SessionEnded(catalog, *other->session));
    }
  }
  c.session = accepted.session;
  c.socket.set_frame_bytes_max(kPoolFrameBytesMax);
  if (c.challenge) {
    if (token) {
      // No arena for this instance: its records move through data connections.
      accepted.accept.data_token = token->bytes;
      accepted.accept.window_bytes = kPoolWindowBytesMax;
      accepted.accept.window_credits = kPoolWindowCreditsDefault;
      data_sessions[accepted.session.value] =
          DataSession{.instance = accepted.accept.instance, .token = token->bytes};
      grants.OpenSession(accepted.session);
    } else {
      accepted.accept.arena_path = arena_path;  // no fds over TCP: the file, by path
    }
    // The manager's own proof, so the instance maps only a file it named.
    accepted.accept.proof = ProvePoolAccept(*job_secret, hello.client_nonce.value_or(Nonce{}),
                                            *c.challenge, accepted.accept);
    return c.socket.Send(accepted.accept).ok();
  }
  const int arena_fd = arena.fd();
  return c.socket.Send(accepted.accept, std::span<const int>(&arena_fd, 1)).ok();
}

bool PoolServer::Loop::AnswerDataHello(Connection& c, const PoolDataHello& hello) {
  if (!c.challenge || !job_secret || !PoolDataProven(*job_secret, *c.challenge, hello)) {
    spdlog::warn("pool: rejected a data connection: it does not prove this job's secret");
    ++traffic.hellos_rejected["data_job_secret"];
    Publish();
    return false;
  }
  const auto match = std::find_if(data_sessions.begin(), data_sessions.end(), [&](const auto& d) {
    return d.second.instance == hello.instance &&
           CRYPTO_memcmp(d.second.token.data(), hello.token.data(), hello.token.size()) == 0;
  });
  if (match == data_sessions.end()) {
    spdlog::warn("pool: rejected a data connection: no open session holds its token");
    ++traffic.hellos_rejected["data_token"];
    Publish();
    (void)c.socket.Send(PoolDataAccept{
        .status = Status::NotFound("no open session of this instance holds that data token")});
    return false;
  }
  if (data.Live(SessionId(match->first)) >= PoolDataServer::kConnectionsPerSessionMax) {
    spdlog::warn("pool: rejected a data connection: session {} has {} already", match->first,
                 PoolDataServer::kConnectionsPerSessionMax);
    ++traffic.hellos_rejected["data_crowded"];
    Publish();
    (void)c.socket.Send(PoolDataAccept{
        .status = Status::Busy("the session has its data connections open already")});
    return false;
  }
  if (!c.socket.Send(PoolDataAccept{.status = Status::Ok()}).ok()) return false;
  auto [socket, tls] = c.socket.Release();
  (void)data.Serve(SessionId(match->first),
                   std::make_unique<DataStream>(std::move(socket), std::move(tls)));
  return false;
}

void PoolServer::Loop::DropUnwritablePuts() {
  if (data_sessions.empty()) return;
  grants.DropUnwritable(
      [this](SessionId session, PutId put) { return catalog.PutWritable(session, put); });
}

void PoolServer::Loop::EndDataSession(SessionId session) {
  grants.EndSession(session);  // returns once no window of it is landing
  data.EndSession(session);
  data_sessions.erase(session.value);
}

void PoolServer::Loop::Close(int fd) {
  auto it = connections.find(fd);
  if (it == connections.end()) return;
  if (it->second->session.has_value()) {
    const SessionId session = *it->second->session;
    if (data_sessions.contains(session.value)) EndDataSession(session);
    // NotFound: the instance reconnected and its new session replaced this one.
    (void)catalog.EndSession(session);
    DropUnwritablePuts();  // its own records took other sessions' pending children
    connections.erase(it);
    SendRelayAnswers(relay.SessionEnded(catalog, session));
    return;
  }
  connections.erase(it);
}

Result<std::unique_ptr<PoolServer>> PoolServer::Start(const PoolServerOptions& options,
                                                      uint64_t generation) {
  if (options.name.empty()) return Status::InvalidArgument("a pool needs a --name");
  if (!options.tcp_host.empty() && !options.job_secret) {
    return Status::InvalidArgument(
        "a TCP control address needs the job secret (--job-secret-file or STRATA_JOB_SECRET): "
        "every Hello over TCP proves it");
  }
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
  Listeners listeners;
  STRATA_ASSIGN_OR_RETURN(listeners.unix_socket, ListenUnix(options.socket_path));
  if (!options.tcp_host.empty()) {
    STRATA_ASSIGN_OR_RETURN(listeners.tcp,
                            ListenTcp(options.tcp_host, options.tcp_port, &listeners.tcp_port));
  }
  wire::UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) return Status::FromErrno(errno, "eventfd");
  return std::unique_ptr<PoolServer>(new PoolServer(options, std::move(opened.arena),
                                                    opened.reopened, std::move(listeners),
                                                    std::move(wake), opened.generation));
}

PoolServer::PoolServer(const PoolServerOptions& options, std::unique_ptr<Arena> arena,
                       bool reopened, Listeners listeners, wire::UniqueFd wake, uint64_t generation)
    : options_(options),
      identity_{.pool_name = options.name,
                .generation = generation,
                .slot_bytes = arena->slot_bytes(),
                .slot_count = arena->slot_count()},
      arena_(std::move(arena)),
      grants_(std::make_unique<SessionGrants>(*arena_)),
      data_(std::make_unique<PoolDataServer>(*grants_)),
      reopened_(reopened),
      tcp_port_(listeners.tcp_port),
      wake_(std::move(wake)),
      loop_(std::make_unique<Loop>(options_, identity_, *arena_, std::move(listeners), wake_.get(),
                                   stats_, *grants_, *data_)) {
  loop_->Publish();
  thread_ = std::thread([this] { loop_->Run(); });
}

PoolServer::~PoolServer() { Stop(); }

PoolManagerStats PoolServer::Stats() const {
  PoolManagerStats s;
  {
    MutexLock lock(stats_.mu);
    s = stats_.stats;
  }
  s.data = data_->Counts();
  return s;
}

void PoolServer::Stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
  thread_.join();
  (void)::unlink(options_.socket_path.c_str());
}

}  // namespace strata::pool
