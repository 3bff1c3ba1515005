// TlsSession: mutual TLS (the TlsContext's rules: TLS 1.3, both sides
// present a certificate of the cluster CA) over one connected, non-blocking
// stream socket that Strata reads and writes itself, outside Asio: the pool's
// TCP control channel (UnixFdChannel::UseTls). The handshake advances one
// step per call, so a server's poll loop never waits on a slow peer.
//
// Thread: one thread at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>

#include "store/base/status.h"
#include "wire/tls.h"

namespace strata::wire {

enum class TlsSide : unsigned char { kClient, kServer };

class TlsSession {
 public:
  // Binds a session to `socket`, which must be non-blocking and stay open
  // while the session lives (the caller owns it). `write_bound` bounds one
  // Write. OpenSSL writes the socket without MSG_NOSIGNAL, so the first
  // session sets SIGPIPE to ignored when it still has its default action (a
  // reset peer then fails the write instead of ending the process).
  static Result<std::unique_ptr<TlsSession>> Start(std::shared_ptr<const TlsContext> context,
                                                   int socket, TlsSide side,
                                                   std::chrono::milliseconds write_bound);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // One step of the handshake: true once it is done, false while it waits
  // for the peer (call again when the socket is readable). kUnavailable
  // naming why it failed (the peer's certificate, a closed connection).
  Result<bool> Handshake();
  // Completes the handshake within `bound`, waiting on the socket.
  Status HandshakeWithin(std::chrono::milliseconds bound);
  bool handshake_done() const { return done_; }
  // Whether the last step stopped waiting to write (poll POLLOUT then).
  bool WantsWrite() const;

  // Reads decrypted bytes into `buffer`: how many, 0 when none are there
  // yet. kUnavailable when the peer closed or the stream failed.
  Result<size_t> Read(std::span<std::byte> buffer);
  // Writes every byte within the write bound (kUnavailable past it or on a
  // failed stream).
  Status Write(std::span<const std::byte> bytes);
  // The bound of each later Write (a caller with a deadline of its own sets
  // what is left of it before each write: the pool's data connections).
  void set_write_bound(std::chrono::milliseconds bound) { write_bound_ = bound; }
  // Whether decrypted bytes wait inside the session (a poll on the socket
  // would not see them).
  bool HasBuffered() const;

 private:
  struct Ssl;
  TlsSession(std::shared_ptr<const TlsContext> context, std::unique_ptr<Ssl> ssl, int socket,
             std::chrono::milliseconds write_bound);
  // Waits for the socket to be readable (`read`) or writable, until `deadline`.
  Status WaitFor(bool read, std::chrono::steady_clock::time_point deadline) const;

  std::shared_ptr<const TlsContext> context_;  // outlives ssl_
  std::unique_ptr<Ssl> ssl_;
  int socket_;
  std::chrono::milliseconds write_bound_;
  bool done_ = false;
};

}  // namespace strata::wire
