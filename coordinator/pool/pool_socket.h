// PoolSocket: one connected stream socket carrying pool frames
// (pool_codec.h): a Unix socket, with file descriptors passed beside a frame
// (SCM_RIGHTS), or TCP (no fds: PoolServer names the arena's file instead):
// wire's UnixFdChannel with the pool codec, as attach/client/unix_channel.h
// is with the attach codec.
//
// Thread: one thread at a time.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/pool/pool_messages.h"
#include "store/base/status.h"
#include "wire/unique_fd.h"
#include "wire/unix_fd_channel.h"

namespace strata::pool {

// Fds passed with one frame at most (a HelloAccept passes one, the arena).
inline constexpr size_t kPoolFdsPerFrameMax = 4;

// A message and the fds that arrived with its frame.
using PoolReceived = wire::FdMessage<PoolMessage>;

class PoolSocket {
 public:
  explicit PoolSocket(wire::UniqueFd socket);

  // Writes the whole frame, with `fds` on its first byte. kUnavailable when the
  // peer is gone or read nothing within the socket's send timeout.
  Status Send(const PoolMessage& message, std::span<const int> fds = {});
  // Reads what is there without waiting: a message once a frame completed,
  // nullopt if none has. kUnavailable on EOF or a reset; kCorruption or
  // kInvalidArgument for a bad frame.
  Result<std::optional<PoolReceived>> TryReceive();
  // Waits up to `bound` for the next message (kUnavailable on timeout).
  Result<PoolReceived> Receive(std::chrono::milliseconds bound);

  int fd() const { return channel_.fd(); }
  void set_frame_bytes_max(size_t bytes) { channel_.set_frame_bytes_max(bytes); }
  // Every later byte goes through `tls` (its handshake done).
  void UseTls(std::unique_ptr<wire::TlsSession> tls) { channel_.UseTls(std::move(tls)); }
  // The socket and its TLS session, between frames (wire::UnixFdChannel::Release).
  std::pair<wire::UniqueFd, std::unique_ptr<wire::TlsSession>> Release() {
    return channel_.Release();
  }

 private:
  wire::UnixFdChannel channel_;
};

// A listening Unix socket at `path` (an old socket file there is replaced),
// owner-only (0600). Non-blocking accepts.
Result<wire::UniqueFd> ListenUnix(const std::string& path);
// Connects to `path`, with `send_bound` as its send timeout.
Result<wire::UniqueFd> ConnectUnix(const std::string& path, std::chrono::milliseconds send_bound);

// A pool control address: a Unix socket path, or "tcp://HOST:PORT".
struct PoolAddress {
  std::string unix_path;  // set for a Unix socket
  std::string host;       // set for TCP
  uint16_t port = 0;
  bool tcp() const { return unix_path.empty(); }
  std::string ToString() const;
};
// kInvalidArgument naming `text` for an empty path, or a tcp:// address
// without a host or with a port outside 1..65535 (0..65535 when
// `listening`: port 0 lets the kernel pick one).
Result<PoolAddress> ParsePoolAddress(const std::string& text, bool listening = false);

// A listening TCP socket on `host`:`port` (port 0: the kernel picks one),
// non-blocking accepts; `bound_port` receives the port it listens on.
Result<wire::UniqueFd> ListenTcp(const std::string& host, uint16_t port, uint16_t* bound_port);
// Connects to `host`:`port` within `bound` (also its send timeout), with
// TCP_NODELAY. kUnavailable when nothing answers in time.
Result<wire::UniqueFd> ConnectTcp(const std::string& host, uint16_t port,
                                  std::chrono::milliseconds bound);
// Sets TCP_NODELAY on an accepted or connected TCP socket.
Status SetNoDelay(int fd);
// Makes a socket non-blocking (a TLS session's reads and writes).
Status SetNonBlocking(int fd);

}  // namespace strata::pool
