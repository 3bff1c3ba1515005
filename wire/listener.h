// Listener: accepts TCP connections and hands each one out as a Link, with
// the peer's address so the owner can check it against the rendezvous.
// Every accepted link starts unadmitted by default (LinkAdmission::
// kAwaitHello): small frames and a Hello deadline until its owner calls
// Link::AcceptHello().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "store/base/status.h"
#include "wire/endpoint.h"
#include "wire/link/link.h"

namespace strata::wire {

struct ListenerOptions {
  // Numeric address and port to bind. "127.0.0.1" (default) accepts local
  // connections only; "0.0.0.0" IPv4 on every interface, "::" IPv6 and IPv4;
  // port 0 picks a free port.
  Endpoint bind{"127.0.0.1", 0};
  // For every accepted link; its `admission` is replaced by the one below.
  LinkOptions link_options;
  // kAwaitHello (default): accepted links wait for AcceptHello() under
  // link_options' hello_frame_bytes_max and hello_timeout. kAdmitted: for
  // owners with no Hello (tests of the link itself).
  LinkAdmission admission = LinkAdmission::kAwaitHello;
  // Connections accepted over the listener's life; later ones are closed at
  // once and counted (each link costs a thread). Default 1024.
  size_t links_max = 1024;
};

struct ListenerStats {
  uint64_t accepted = 0;
  uint64_t refused = 0;        // over links_max
  uint64_t accept_errors = 0;  // accept() failed; retried after a pause
};

class Listener {
 public:
  // Called on the listener's thread with each accepted link, not yet started
  // (its own thread adopts the socket at once: kConnecting, then kOpen); the
  // callee owns it and calls Start(). Must not block.
  using AcceptHandler = std::function<void(std::unique_ptr<Link>)>;

  // Binds, listens and starts accepting. Errors: kInvalidArgument for an
  // address that is not a numeric IP, kIoError when binding fails.
  static Result<std::unique_ptr<Listener>> Open(ListenerOptions options, AcceptHandler on_accept);

  // Close().
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // The bound address and port (the chosen port when bound to port 0).
  const Endpoint& local_endpoint() const;
  // Stops accepting and joins the listener's thread; links already handed
  // out are unaffected. Idempotent. Must not be called from on_accept.
  void Close();
  ListenerStats stats() const;

 private:
  class Impl;
  explicit Listener(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::wire
