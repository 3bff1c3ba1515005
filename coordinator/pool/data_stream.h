// DataStream: one data connection of the pool's TCP data channel (seed 2.15;
// docs/pool.md, "The data channel"): pool frames (pool_codec.h), each
// followed on the stream by the raw bytes it announces (a SlotWrite's or a
// SlotData's window), over a connected TCP socket in the clear or through
// its TLS session. Every call waits at most until its deadline (then fails
// kUnavailable with timed_out() set); the socket is non-blocking underneath.
//
// Thread: one thread at a time, except Shutdown (any thread).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "coordinator/pool/pool_messages.h"
#include "store/base/status.h"
#include "wire/frame_reader.h"
#include "wire/tls_session.h"
#include "wire/unique_fd.h"

namespace strata::pool {

using DataDeadline = std::chrono::steady_clock::time_point;

class DataStream {
 public:
  // Takes a connected socket (made non-blocking here) and its TLS session,
  // whose handshake is done (null: in the clear).
  DataStream(wire::UniqueFd socket, std::unique_ptr<wire::TlsSession> tls);
  ~DataStream();
  DataStream(const DataStream&) = delete;
  DataStream& operator=(const DataStream&) = delete;

  // Sends `message`'s frame, then `payload` (empty: none). kUnavailable when
  // the peer is gone, the stream was shut down or the deadline passed;
  // kInvalidArgument when the message does not encode.
  Status Send(const PoolMessage& message, std::span<const std::byte> payload,
              DataDeadline deadline);
  // The next frame's message: its first byte by `deadline`, the rest within
  // `rest_bound` of it. kUnavailable as for Send (EOF included);
  // kCorruption / kInvalidArgument for a bad frame.
  Result<PoolMessage> Receive(DataDeadline deadline, std::chrono::milliseconds rest_bound =
                                                         std::chrono::milliseconds(10'000));
  // Reads exactly out.size() raw bytes (a window that follows a frame).
  Status ReadBytes(std::span<std::byte> out, DataDeadline deadline);

  // Ends the stream under a call blocked on another thread (it fails
  // kUnavailable) and every later one. Thread-safe.
  void Shutdown();
  // Whether the last failure was a deadline passing (a stalled peer).
  bool timed_out() const { return timed_out_; }

 private:
  // Waits for the socket to be readable (`read`) or writable until `deadline`.
  Status Wait(bool read, DataDeadline deadline) const;
  // Writes every byte of `parts` in order (one writev at a time in the clear).
  Status WriteAll(std::span<const std::span<const std::byte>> parts, DataDeadline deadline);

  wire::UniqueFd socket_;
  std::unique_ptr<wire::TlsSession> tls_;
  wire::FrameReader reader_;
  mutable bool timed_out_ = false;
};

}  // namespace strata::pool
