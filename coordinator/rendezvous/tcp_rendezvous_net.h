// What both sides of the TCP rendezvous (tcp_rendezvous_server.cc,
// tcp_rendezvous_client.cc) share: their names for the socket and clock
// types, and how a socket error becomes a Status. Internal to launch/.
#pragma once

#include <asio/error_code.hpp>
#include <asio/ip/tcp.hpp>
#include <string>

#include "coordinator/rendezvous/rendezvous.h"
#include "store/base/status.h"

namespace strata::rendezvous_net {

using asio::ip::tcp;
using Clock = RendezvousClock;

// A socket operation `what` failed with `ec`: the peer or network is the
// problem, so kUnavailable (retryable by a peer).
inline Status NetError(const std::string& what, const asio::error_code& ec) {
  return Status::Unavailable(what + ": " + ec.message());
}

}  // namespace strata::rendezvous_net
