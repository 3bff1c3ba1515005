#include "coordinator/pool/pool_tcp_open.h"

#include <algorithm>
#include <utility>

#include "wire/unix_fd_channel.h"

namespace strata::pool {

Result<PoolTcpOpened> OpenPoolTcp(const PoolAddress& address,
                                  const std::shared_ptr<const wire::TlsContext>& tls,
                                  std::chrono::milliseconds send_bound,
                                  std::chrono::steady_clock::time_point deadline) {
  const auto left = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now()));
  };
  const auto connecting = std::chrono::steady_clock::now();
  STRATA_ASSIGN_OR_RETURN(wire::UniqueFd fd, ConnectTcp(address.host, address.port, left()));
  const auto connect_us =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::steady_clock::now() - connecting)
                                .count());
  STRATA_RETURN_IF_ERROR(wire::SetSendTimeout(fd.get(), send_bound));
  const int raw = fd.get();
  PoolSocket socket(std::move(fd));
  if (tls != nullptr) {
    STRATA_RETURN_IF_ERROR(SetNonBlocking(raw));
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<wire::TlsSession> session,
                            wire::TlsSession::Start(tls, raw, wire::TlsSide::kClient, send_bound));
    STRATA_RETURN_IF_ERROR(
        session->HandshakeWithin(left()).WithContext("the pool at " + address.ToString()));
    socket.UseTls(std::move(session));
  }
  STRATA_ASSIGN_OR_RETURN(PoolReceived first, socket.Receive(left()));
  const auto* challenge = std::get_if<PoolChallenge>(&first.message);
  if (challenge == nullptr) {
    return Status::Corruption("the pool at " + address.ToString() +
                              " did not open with a Challenge");
  }
  return PoolTcpOpened{
      .socket = std::move(socket), .challenge = challenge->nonce, .connect_us = connect_us};
}

}  // namespace strata::pool
