#include "attach/attach_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include "attach/store_dispatch.h"

namespace strata::attach {
namespace {

Result<sockaddr_un> AddressOf(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return Status::InvalidArgument("attach socket path \"" + path + "\": empty or longer than " +
                                   std::to_string(sizeof(addr.sun_path) - 1) + " bytes");
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

// Removes a socket file nobody serves (left by a killed process); refuses
// when another process answers on it or the path is not a socket.
Status ClearStaleSocket(const std::string& path, const sockaddr_un& addr) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return Status::Ok();
  if (!S_ISSOCK(st.st_mode)) {
    return Status::AlreadyExists("attach socket path " + path + " exists and is not a socket");
  }
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
    return Status::AlreadyExists("another process serves the attach socket " + path);
  }
  if (::unlink(path.c_str()) != 0) return Status::FromErrno(errno, "removing stale " + path);
  return Status::Ok();
}

}  // namespace

struct AttachServer::Session {
  enum class Phase : unsigned char { kAwaitingHello, kAttached, kDraining };
  Session(UnixChannel c, HostStore* store) : channel(std::move(c)) {
    if (store != nullptr) dispatch.emplace(*store);
  }

  // Stops the store calls (if any) from issuing copies.
  void StopIssuing() {
    if (dispatch) dispatch->StopIssuing();
  }

  UnixChannel channel;
  std::optional<StoreDispatch> dispatch;  // empty: a peer's runtime, planes only
  Phase phase = Phase::kAwaitingHello;
  bool close_requested = false;  // answer CloseDone once drained
  uint64_t drain_deadline_ms = 0;
  std::string runtime_id;
};

Result<std::unique_ptr<AttachServer>> AttachServer::Listen(AttachServerOptions options,
                                                           AttachTargets targets) {
  if (targets.planes == nullptr) {
    return Status::InvalidArgument("attach server: no planes to share");
  }
  STRATA_ASSIGN_OR_RETURN(sockaddr_un addr, AddressOf(options.socket_path));
  STRATA_RETURN_IF_ERROR(ClearStaleSocket(options.socket_path, addr));
  // Bound, made owner-only and listening under a temporary name, then renamed
  // into place: the path appears only once a runtime can connect to it, so a
  // runtime may wait for the file and connect once.
  const std::string staging = options.socket_path + ".new-" + std::to_string(::getpid());
  STRATA_ASSIGN_OR_RETURN(sockaddr_un staging_addr, AddressOf(staging));
  (void)::unlink(staging.c_str());  // left by a killed process of the same pid
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Status::FromErrno(errno, "attach socket");
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&staging_addr), sizeof staging_addr) !=
      0) {
    return Status::FromErrno(errno, "binding attach socket " + staging);
  }
  if (::chmod(staging.c_str(), S_IRUSR | S_IWUSR) != 0 || ::listen(fd.get(), 4) != 0 ||
      ::rename(staging.c_str(), options.socket_path.c_str()) != 0) {
    const int err = errno;
    ::unlink(staging.c_str());
    return Status::FromErrno(err, "attach socket " + options.socket_path);
  }
  if (!options.peer_uid) options.peer_uid = ::geteuid();
  return std::unique_ptr<AttachServer>(
      new AttachServer(std::move(options), targets, std::move(fd)));
}

AttachServer::AttachServer(AttachServerOptions options, AttachTargets targets, UniqueFd listener)
    : options_(std::move(options)),
      store_(targets.store),
      planes_(*targets.planes),
      gate_(targets.gate),
      listener_(std::move(listener)),
      progress_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      progress_(std::make_shared<WakeSignal>()) {
  if (store_ != nullptr) WatchStore();
}

void AttachServer::WatchStore() {
  // Without the eventfd the store is still polled every turn.
  if (progress_fd_.valid()) {
    progress_->AlsoNotifyEventFd(progress_fd_.get());
    store_->NotifyOnProgress(progress_);
  }
}

void AttachServer::SetStore(HostStore& store) {
  if (store_ != nullptr) return;
  store_ = &store;
  WatchStore();
  if (session_ != nullptr && session_->phase != Session::Phase::kDraining) {
    session_->dispatch.emplace(store);
  }
}

AttachServer::~AttachServer() {
  if (store_ != nullptr) store_->NotifyOnProgress(nullptr);
  progress_->AlsoNotifyEventFd(-1);
  // Never unmap planes a copy may still use: the owner closes the store
  // (draining it) before destroying the server.
  ::unlink(options_.socket_path.c_str());
}

bool AttachServer::attached() const {
  return session_ != nullptr && session_->phase == Session::Phase::kAttached;
}

void AttachServer::Step(uint64_t now_ms, std::chrono::milliseconds wait) {
  std::vector<StoreEvent> events;
  if (store_ != nullptr) store_->Poll(now_ms, events);
  if (session_ != nullptr && session_->dispatch && !events.empty()) {
    std::vector<AttachMessage> out;
    session_->dispatch->OnEvents(events, out);
    if (session_->phase == Session::Phase::kAttached) {
      for (const AttachMessage& m : out) Send(m);
    }
  }
  if (session_ != nullptr && session_->phase == Session::Phase::kDraining) {
    FinishDetachIfDrained(now_ms);
  }
  const bool reading = session_ != nullptr && session_->phase != Session::Phase::kDraining;
  const bool draining = session_ != nullptr && !reading;
  // While draining, a runtime that connects waits in the backlog (its Hello
  // is answered once the planes are released) and the store is polled again
  // soon rather than the sockets waited on.
  // The store's own descriptor (a pool manager's answers): readable, the
  // next turn polls the store, which takes them.
  pollfd fds[4] = {{draining ? -1 : listener_.get(), POLLIN, 0},
                   {-1, POLLIN, 0},
                   {progress_fd_.valid() ? progress_fd_.get() : -1, POLLIN, 0},
                   {store_ != nullptr ? store_->PollFd() : -1, POLLIN, 0}};
  if (reading) fds[1].fd = session_->channel.fd();
  const int wait_ms = draining ? 1 : static_cast<int>(wait.count());
  if (::poll(fds, 4, wait_ms) <= 0) return;
  if ((fds[2].revents & POLLIN) != 0) {
    uint64_t count = 0;  // resets the eventfd; the next turn polls the store
    (void)!::read(progress_fd_.get(), &count, sizeof count);
  }
  // The session first: a runtime that was killed and restarted at once shows
  // its old connection's end and its new connection in the same poll, and
  // the new one must wait for the old one's drain, not be refused as a
  // second runtime.
  if (reading && fds[1].revents != 0) ReadSession(now_ms);
  const bool still_reading = session_ != nullptr && session_->phase != Session::Phase::kDraining;
  if ((fds[0].revents & POLLIN) != 0 && (session_ == nullptr || still_reading)) Accept();
}

void AttachServer::Accept() {
  UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!fd.valid()) return;
  (void)SetSendTimeout(fd.get(), options_.send_bound);
  UnixChannel channel(std::move(fd));
  auto refuse = [&channel](const std::string& reason) {
    spdlog::warn("attach refused: {}", reason);
    (void)channel.Send(HelloReject{reason});
  };
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(channel.fd(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return refuse("cannot read the peer's credentials: " + std::string(std::strerror(errno)));
  }
  if (cred.uid != *options_.peer_uid) {
    return refuse("peer uid " + std::to_string(cred.uid) + " (pid " + std::to_string(cred.pid) +
                  ") is not uid " + std::to_string(*options_.peer_uid) +
                  ", the only uid this rank admits");
  }
  if (!wedged_reason_.empty()) return refuse(wedged_reason_);
  if (session_ != nullptr) return refuse("a runtime is already attached to this rank");
  session_ = std::make_unique<Session>(std::move(channel), store_);
}

void AttachServer::ReadSession(uint64_t now_ms) {
  while (session_ != nullptr && session_->phase != Session::Phase::kDraining) {
    Result<std::optional<Received>> got = session_->channel.TryReceive();
    if (!got.ok()) return BeginDetach(now_ms, got.status().ToString());
    if (!got->has_value()) return;
    Received& r = **got;
    if (session_->phase == Session::Phase::kAwaitingHello) {
      HandleHello(std::move(r));
      continue;
    }
    if (std::holds_alternative<CloseRequest>(r.message)) {
      session_->close_requested = true;
      return BeginDetach(now_ms, "the runtime closed");
    }
    if (!session_->dispatch) {
      return BeginDetach(now_ms,
                         "bad request: a peer rank's runtime only shares its planes; rank zero's "
                         "runtime makes the store calls");
    }
    std::vector<AttachMessage> replies;
    if (Status s = session_->dispatch->Handle(r.message, replies); !s.ok()) {
      return BeginDetach(now_ms, "bad request: " + s.ToString());
    }
    for (const AttachMessage& m : replies) Send(m);
  }
}

void AttachServer::HandleHello(Received hello) {
  const auto* h = std::get_if<AttachHello>(&hello.message);
  Status s = h == nullptr ? Status::InvalidArgument("the first message must be a Hello")
                          : CheckHello(*h, hello.fds.size(), options_.expected);
  if (s.ok() && options_.take_rendezvous) s = options_.take_rendezvous(h->rendezvous);
  if (s.ok()) s = planes_.Import(PlaneFdsOf(*h, hello.fds, options_.expected.geometry));
  if (!s.ok()) {
    spdlog::warn("attach refused: {}", s.message());
    (void)session_->channel.Send(HelloReject{s.message()});
    session_.reset();  // nothing was mapped, nothing issued
    return;
  }
  // The fds close when `hello` goes; the mappings keep the memory.
  if (gate_ != nullptr) gate_->Open();
  session_->phase = Session::Phase::kAttached;
  session_->runtime_id = h->runtime_id;
  ++attach_count_;
  spdlog::info("runtime \"{}\" attached", h->runtime_id);
  Send(HelloAccept{.rendezvous = options_.announce});
}

void AttachServer::Send(const AttachMessage& message) {
  if (session_ == nullptr || session_->phase == Session::Phase::kDraining) return;
  if (Status s = session_->channel.Send(message); !s.ok()) {
    // Detach without a clock reading: the drain deadline starts at the next Step.
    session_->phase = Session::Phase::kDraining;
    session_->StopIssuing();
    if (gate_ != nullptr) gate_->Shut();
    spdlog::warn("runtime \"{}\" detached: {}", session_->runtime_id, s.ToString());
  }
}

void AttachServer::BeginDetach(uint64_t now_ms, const std::string& why) {
  if (session_->phase == Session::Phase::kAwaitingHello) {
    session_.reset();
    return;
  }
  session_->phase = Session::Phase::kDraining;
  session_->StopIssuing();
  if (gate_ != nullptr) gate_->Shut();
  session_->drain_deadline_ms = now_ms + options_.drain_bound_ms;
  const size_t abandoned = session_->dispatch ? session_->dispatch->abandoned().size() : 0;
  spdlog::info(
      "runtime \"{}\" detaching ({}): {} copies or jobs in flight, {} jobs abandoned by "
      "the stopped store",
      session_->runtime_id, why, InFlight(), abandoned);
  FinishDetachIfDrained(now_ms);
}

size_t AttachServer::InFlight() const {
  size_t n = gate_ != nullptr ? gate_->in_flight() : 0;
  if (session_ == nullptr || !session_->dispatch) return n;
  n += session_->dispatch->in_flight();
  // Without a gate only the store's events say a copy finished, and a
  // stopped store sends none: its abandoned jobs may still be copying.
  if (gate_ == nullptr) n += session_->dispatch->abandoned().size();
  return n;
}

void AttachServer::FinishDetachIfDrained(uint64_t now_ms) {
  Session& s = *session_;
  if (s.drain_deadline_ms == 0) s.drain_deadline_ms = now_ms + options_.drain_bound_ms;
  if (InFlight() > 0) {
    if (now_ms < s.drain_deadline_ms) return;
    wedged_reason_ = "copies into the planes of runtime \"" + s.runtime_id +
                     "\" did not finish within the drain bound; its planes stay mapped";
    spdlog::error("{}", wedged_reason_);
    session_.reset();  // the planes stay imported: never unmapped under a copy
    return;
  }
  planes_.Release();
  const Status outcome = s.dispatch ? s.dispatch->DetachStatus() : Status::Ok();
  if (s.close_requested) (void)s.channel.Send(CloseDone{outcome});
  spdlog::info("runtime \"{}\" detached; its planes are unmapped{}", s.runtime_id,
               outcome.ok() ? "" : "; " + outcome.message());
  session_.reset();
}

}  // namespace strata::attach
