// The first steps of every TCP connection to a pool manager, control or data
// (docs/pool.md, "Protocol"): connect, the TLS handshake when configured,
// and the manager's Challenge, all within one deadline.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "coordinator/pool/pool_socket.h"
#include "coordinator/rendezvous/nonce.h"
#include "store/base/status.h"
#include "wire/tls.h"

namespace strata::pool {

struct PoolTcpOpened {
  PoolSocket socket;
  Nonce challenge;
  uint64_t connect_us = 0;  // how long the TCP connect took (one round trip at least)
};

// Connects to `address` (a tcp:// one), runs TLS when `tls` is set, and
// reads the Challenge; `send_bound` bounds each later send. kUnavailable
// when nothing answers before `deadline`; kCorruption when the first frame
// is not a Challenge.
Result<PoolTcpOpened> OpenPoolTcp(const PoolAddress& address,
                                  const std::shared_ptr<const wire::TlsContext>& tls,
                                  std::chrono::milliseconds send_bound,
                                  std::chrono::steady_clock::time_point deadline);

}  // namespace strata::pool
