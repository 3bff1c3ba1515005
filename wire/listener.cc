#include "wire/listener.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <asio/ip/v6_only.hpp>
#include <asio/post.hpp>
#include <chrono>
#include <exception>
#include <thread>

#include "store/base/mutex.h"
#include "wire/tcp_stream.h"
#include "wire/tls_stream.h"

namespace strata::wire {

namespace {
constexpr int kListenBacklog = 128;
// Pause after a failed accept (e.g. out of descriptors) before the next one.
constexpr std::chrono::milliseconds kAcceptRetryDelay{50};
}  // namespace

// Members marked [io] belong to the listener's thread; [mu] ones are guarded
// by mutex_.
class Listener::Impl {
 public:
  Impl(ListenerOptions options, AcceptHandler on_accept)
      : options_(std::move(options)),
        on_accept_(std::move(on_accept)),
        acceptor_(io_),
        retry_timer_(io_) {}

  ~Impl() { Close(); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  Status Bind() {
    std::error_code error;
    const asio::ip::address address = asio::ip::make_address(options_.bind.address, error);
    if (error) {
      return Status::InvalidArgument(
          fmt::format("listen: '{}' is not a numeric IP address", options_.bind.address));
    }
    const asio::ip::tcp::endpoint endpoint(address, options_.bind.port);
    const std::string where = options_.bind.ToString();
    if (acceptor_.open(endpoint.protocol(), error)) return Failed("open", where, error);
    if (address.is_v6()) acceptor_.set_option(asio::ip::v6_only(false), error);
    if (acceptor_.set_option(asio::ip::tcp::acceptor::reuse_address(true), error)) {
      return Failed("set SO_REUSEADDR on", where, error);
    }
    if (acceptor_.bind(endpoint, error)) return Failed("bind", where, error);
    if (acceptor_.listen(kListenBacklog, error)) return Failed("listen on", where, error);
    local_ = internal::ToEndpoint(acceptor_.local_endpoint(error));
    return Status::Ok();
  }

  void Start() {
    AcceptNext();
    thread_ = std::thread([this] { Run(); });
  }

  void Close() {
    STRATA_ASSERT(std::this_thread::get_id() != thread_.get_id(),
                  "Listener::Close called from its own accept handler");
    asio::post(io_, [this] {
      std::error_code ignored;
      acceptor_.close(ignored);
      retry_timer_.cancel();
    });
    if (thread_.joinable()) thread_.join();
  }

  const Endpoint& local_endpoint() const { return local_; }
  ListenerStats stats() const {
    MutexLock lock(mutex_);
    return stats_;
  }

 private:
  static Status Failed(std::string_view what, const std::string& where, std::error_code error) {
    return Status::IoError(fmt::format("listen: cannot {} {}: {}", what, where, error.message()));
  }

  void Run() {
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("listener on {}: accept handler threw: {}", local_.ToString(), e.what());
      } catch (...) {
        spdlog::error("listener on {}: accept handler threw", local_.ToString());
      }
    }
  }

  void AcceptNext() {
    if (!acceptor_.is_open()) return;
    acceptor_.async_accept([this](const std::error_code& error, asio::ip::tcp::socket socket) {
      OnAccept(error, std::move(socket));
    });
  }

  void OnAccept(const std::error_code& error, asio::ip::tcp::socket socket) {
    if (error == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (error) {
      Count(&ListenerStats::accept_errors);
      spdlog::warn("listener on {}: accept failed: {}", local_.ToString(), error.message());
      retry_timer_.expires_after(kAcceptRetryDelay);
      retry_timer_.async_wait([this](const std::error_code& e) {
        if (!e) AcceptNext();
      });
      return;
    }
    AcceptNext();  // first, so nothing below can stop the accept loop
    std::error_code peer_error;
    const asio::ip::tcp::endpoint peer = socket.remote_endpoint(peer_error);
    if (peer_error || stats().accepted >= options_.links_max) {
      if (!peer_error) {
        Count(&ListenerStats::refused);
        spdlog::warn("listener on {}: refused {}: {} links accepted already", local_.ToString(),
                     internal::ToEndpoint(peer).ToString(), options_.links_max);
      }
      std::error_code ignored;
      socket.close(ignored);
      return;
    }
    const Endpoint remote = internal::ToEndpoint(peer);
    const asio::ip::tcp protocol = peer.protocol();
    std::unique_ptr<internal::StreamOpener> opener =
        std::make_unique<internal::AcceptedTcp>(protocol, socket.release());
    if (options_.link_options.tls) {  // the handshake runs on the link's thread
      opener = std::make_unique<internal::TlsOpener>(std::move(opener), options_.link_options.tls,
                                                     internal::TlsRole::kServer,
                                                     options_.link_options.connect_timeout);
    }
    LinkOptions link_options = options_.link_options;
    link_options.admission = options_.admission;
    auto link = std::make_unique<Link>(std::move(link_options), remote, std::move(opener));
    Count(&ListenerStats::accepted);
    on_accept_(std::move(link));
  }

  void Count(uint64_t ListenerStats::*counter) {
    MutexLock lock(mutex_);
    ++(stats_.*counter);
  }

  const ListenerOptions options_;
  const AcceptHandler on_accept_;
  asio::io_context io_;               // before everything bound to it
  asio::ip::tcp::acceptor acceptor_;  // [io]
  asio::steady_timer retry_timer_;    // [io]
  Endpoint local_;                    // set by Bind(), then read-only
  mutable Mutex mutex_;
  ListenerStats stats_ GUARDED_BY(mutex_);
  std::thread thread_;
};

Result<std::unique_ptr<Listener>> Listener::Open(ListenerOptions options, AcceptHandler on_accept) {
  auto impl = std::make_unique<Impl>(std::move(options), std::move(on_accept));
  STRATA_RETURN_IF_ERROR(impl->Bind());
  impl->Start();
  return std::unique_ptr<Listener>(new Listener(std::move(impl)));
}

Listener::Listener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Listener::~Listener() = default;
const Endpoint& Listener::local_endpoint() const { return impl_->local_endpoint(); }
void Listener::Close() { impl_->Close(); }
ListenerStats Listener::stats() const { return impl_->stats(); }

}  // namespace strata::wire
