// RawPeer: a plain socket playing a hostile, stuck or silent peer against an
// accepted, started link (tests/unit/wire).
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "tests/unit/wire/wire_test_util.h"
#include "wire/codec.h"
#include "wire/link/link.h"

namespace strata::wire::testing {

// A plain socket against an accepted, started link: it writes only what a
// test tells it to and reads nothing until SeesConnectionEnd().
class RawPeer {
 public:
  explicit RawPeer(LoopbackListener& listener) : socket_(io_) {
    const Endpoint at = listener.endpoint();
    socket_.connect({asio::ip::make_address(at.address), at.port});
    link_ = listener.NextLink();
    EXPECT_NE(link_, nullptr);
    if (link_) link_->Start(events_.Handlers());
  }
  ~RawPeer() { link_.reset(); }

  void Write(std::span<const std::byte> bytes) {
    asio::write(socket_, asio::buffer(bytes.data(), bytes.size()));
  }
  void WriteWords(const std::vector<uint64_t>& words) { Write(std::as_bytes(std::span(words))); }
  void EndStream() { socket_.shutdown(asio::ip::tcp::socket::shutdown_send); }

  // Waits for the link to close; returns its final state.
  LinkState WaitClosed() {
    std::optional<LinkState> state = events_.closed.Pop();
    EXPECT_TRUE(state.has_value()) << "the link did not close";
    return state.value_or(LinkState{});
  }
  // True once the link's side of the connection is gone (EOF or reset);
  // adds what it read on the way to `*bytes_read` when given.
  bool SeesConnectionEnd(size_t* bytes_read = nullptr) {
    std::array<char, 256> sink;
    std::error_code error;
    while (!error) {
      const size_t n = socket_.read_some(asio::buffer(sink), error);
      if (bytes_read != nullptr) *bytes_read += n;
    }
    return error == asio::error::eof || error == asio::error::connection_reset;
  }

  Link& link() { return *link_; }
  Recorder& events() { return events_; }

 private:
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
  Recorder events_;
  std::unique_ptr<Link> link_;
};

inline std::vector<uint64_t> EncodeWords(const Message& message) {
  Result<Frame> frame = EncodeFrame(message);
  EXPECT_TRUE(frame.ok());
  return frame.ok() ? frame->words : std::vector<uint64_t>{};
}

}  // namespace strata::wire::testing
