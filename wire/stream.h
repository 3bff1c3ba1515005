// Internal to wire/: the byte stream a Link frames messages over, and the
// opener that produces one on the link's I/O thread. TCP implements both
// (tcp_stream.h); a TLS stream replaces them without touching the framing in
// link.cc. Includes Asio: never include this from a public header.
#pragma once

#include <asio/buffer.hpp>
#include <asio/io_context.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "store/base/status.h"
#include "wire/endpoint.h"

namespace strata::wire::internal {

using IoCallback = std::function<void(const std::error_code&, size_t bytes)>;

// A connected, ready byte stream. Every call but TryWriteNow happens on the
// owning link's I/O thread. At most one read and one write are outstanding
// at a time; each completes exactly once, with an error after Close().
class Stream {
 public:
  virtual ~Stream() = default;
  // Reads exactly buffer.size() bytes; asio::error::eof when the peer ended
  // the stream first (bytes says how many arrived).
  virtual void AsyncReadExactly(std::span<std::byte> buffer, IoCallback done) = 0;
  // Reads at least one byte and at most buffer.size(): what has arrived.
  // asio::error::eof (with 0 bytes) when the peer ended the stream.
  virtual void AsyncReadSome(std::span<std::byte> buffer, IoCallback done) = 0;
  // Writes every buffer in order. The bytes must stay valid until `done`.
  virtual void AsyncWriteAll(std::vector<asio::const_buffer> buffers, IoCallback done) = 0;
  // Writes what the kernel takes of `buffers` at once, never blocking: the
  // link's fast path for a send on an idle connection, which spares a wake-up
  // of the I/O thread. Called from the sending thread under the link's lock,
  // only while the stream is open, before Close(), and with no write
  // outstanding (so it never interleaves with AsyncWriteAll). Returns the
  // bytes written: 0 when the socket buffer is full, on any error (the
  // queued write that follows reports it), or when the stream can only write
  // on its I/O thread (a TLS stream, whose records that thread builds).
  virtual size_t TryWriteNow(std::span<const asio::const_buffer> buffers) = 0;
  // Ends the sending direction after the last write (the peer reads EOF).
  virtual void ShutdownSend() = 0;
  // Releases the connection now; outstanding operations complete with
  // asio::error::operation_aborted.
  virtual void Close() = 0;
  // This side's address (for the rendezvous: the address a peer dials).
  virtual Endpoint local_endpoint() const = 0;
};

using OpenCallback = std::function<void(Result<std::unique_ptr<Stream>>)>;

// Produces a ready stream: a TCP connect, an adopted accepted socket, later a
// TLS handshake. Open() and Cancel() run on the link's I/O thread; `done` is
// called exactly once there, also after Cancel().
class StreamOpener {
 public:
  virtual ~StreamOpener() = default;
  virtual void Open(asio::io_context& io, OpenCallback done) = 0;
  virtual void Cancel() = 0;
  // After a failed Open(): whether the TLS handshake (not the connection)
  // failed, so the link counts it in LinkStats::tls_handshake_failures.
  virtual bool HandshakeFailed() const { return false; }
};

}  // namespace strata::wire::internal
