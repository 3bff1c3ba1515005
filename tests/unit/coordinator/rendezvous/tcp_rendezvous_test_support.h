// What the TCP rendezvous tests share: a loopback server and peers that hold
// the test job's secret, and raw sockets for hand-made bytes.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "coordinator/rendezvous/job_secret.h"
#include "coordinator/rendezvous/rendezvous_protocol.h"
#include "coordinator/rendezvous/tcp_rendezvous.h"

namespace strata::testing {

// Bounds for a test's waits; a correct run finishes far sooner.
inline constexpr auto kTestDeadline = std::chrono::seconds(30);
inline constexpr auto kEventBound = std::chrono::seconds(30);

inline RendezvousDeadline Soon() { return RendezvousClock::now() + kTestDeadline; }

// The secret of the job under test (`fill` 's'), or of another job.
inline JobSecret TestJobSecret(char fill = 's') {
  return *JobSecret::FromText(std::string(kJobSecretBytesMin, fill), "test");
}

inline std::unique_ptr<TcpRendezvousServer> ListenLoopback(
    uint64_t seed, TcpRendezvousServer::ProblemObserver obs = {}, uint16_t port = 0) {
  Result<std::unique_ptr<TcpRendezvousServer>> s = TcpRendezvousServer::Listen(
      "127.0.0.1", port, TestJobSecret(), SeededNonceSource(seed), {}, std::move(obs));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

inline std::future<Result<JoinTicket>> JoinAsync(uint16_t port, uint32_t rank, uint32_t world,
                                                 RendezvousDeadline deadline = Soon(),
                                                 JobSecret secret = TestJobSecret()) {
  return std::async(std::launch::async, [=] {
    TcpRendezvousClient client("127.0.0.1", port, secret);
    return client.Join(RankId(rank), world, deadline);
  });
}

// A plain POSIX connection for sending hand-made bytes.
inline int RawConnect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

inline void RawSend(int fd, const std::vector<uint8_t>& bytes) {
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
}

// Reads exactly one frame from `fd` (blocking; the server writes it at once
// or closes) and decodes it; an error when the connection ends first.
inline Result<RendezvousMessage> RawReceive(int fd) {
  std::array<uint8_t, kRendezvousLengthBytes> length{};
  auto read_all = [fd](uint8_t* p, size_t n) {
    while (n > 0) {
      const ssize_t got = read(fd, p, n);
      if (got <= 0) return false;
      p += got;
      n -= static_cast<size_t>(got);
    }
    return true;
  };
  if (!read_all(length.data(), length.size())) return Status::Unavailable("closed");
  STRATA_ASSIGN_OR_RETURN(size_t n, DecodeRendezvousLength(length));
  std::vector<uint8_t> payload(n);
  if (!read_all(payload.data(), n)) return Status::Unavailable("closed mid-frame");
  return DecodeRendezvousPayload(payload);
}

}  // namespace strata::testing
