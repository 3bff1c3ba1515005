// PoolClient::Connect (pool_client.h): the Hello, and the way to the slots
// it leads to: the arena mapped from the fd or the file the manager names,
// or two data connections (remote_slots.h).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "coordinator/pool/lookup_grace.h"
#include "coordinator/pool/pool_client.h"
#include "coordinator/pool/pool_hello_proof.h"
#include "coordinator/pool/pool_tcp_open.h"
#include "coordinator/pool/remote_slots.h"

namespace strata::pool {
namespace {

// The arena file a manager over TCP names (its HelloAccept proven): a regular
// file of this user, 0600 as the manager makes it, opened without blocking
// on anything else there (a FIFO).
Result<wire::UniqueFd> OpenArenaFile(const std::string& path) {
  wire::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) {
    return Status::FailedPrecondition(
        "cannot open the pool's arena file " + path + ": " + std::strerror(errno) +
        " (an instance over TCP maps the manager's arena by path, so it must run on the "
        "manager's host as the same user; or it asks for the data channel: "
        "--prefix-cache-pool-data tcp)");
  }
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return Status::FailedPrecondition("the pool's arena " + path +
                                      " is not a regular file of this user with no group or "
                                      "other access");
  }
  return fd;
}

// Whether connected TCP socket `fd` reaches a peer on this host: its local
// and peer addresses are the same (loopback, or this host's own address).
bool SameHost(int fd) {
  sockaddr_storage local{};
  sockaddr_storage peer{};
  socklen_t local_len = sizeof local;
  socklen_t peer_len = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0 ||
      local.ss_family != peer.ss_family) {
    return false;
  }
  if (local.ss_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in&>(local).sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in&>(peer).sin_addr.s_addr;
  }
  if (local.ss_family == AF_INET6) {
    return std::memcmp(&reinterpret_cast<const sockaddr_in6&>(local).sin6_addr,
                       &reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr,
                       sizeof(in6_addr)) == 0;
  }
  return false;
}

// The two data connections of a session granted the data channel: one for
// the owner's puts, one for the claim copier's reads.
Result<PoolClientSlots> OpenDataChannel(const PoolAddress& address,
                                        const PoolClientOptions& options,
                                        const PoolHelloAccept& accept) {
  const DataChannelOptions data{.address = address,
                                .job_secret = *options.job_secret,
                                .tls = options.tls,
                                .instance = accept.instance,
                                .token = *accept.data_token,
                                .slot_bytes = accept.slot_bytes,
                                .slot_count = accept.slot_count,
                                .window_bytes = accept.window_bytes,
                                .window_credits = accept.window_credits,
                                .bound = options.answer_bound};
  PoolClientSlots slots;
  STRATA_ASSIGN_OR_RETURN(slots.puts, RemoteSlots::Open(data));
  STRATA_ASSIGN_OR_RETURN(slots.claims, RemoteSlots::Open(data));
  return slots;
}

}  // namespace

Result<std::unique_ptr<PoolClient>> PoolClient::Connect(const PoolClientOptions& options) {
  bool no_arena = false;
  Result<std::unique_ptr<PoolClient>> first = ConnectAs(options, &no_arena);
  if (first.ok() || options.data_path != PoolDataPath::kAuto || !no_arena) return first;
  // The manager looked local but its arena's file could not be had (a
  // manager without --arena-file, another user's file, a tunnel whose ends
  // are both loopback): the data channel works from anywhere.
  PoolClientOptions channel = options;
  channel.data_path = PoolDataPath::kChannel;
  Result<std::unique_ptr<PoolClient>> second = ConnectAs(channel, &no_arena);
  if (second.ok()) return second;
  return first;
}

Result<std::unique_ptr<PoolClient>> PoolClient::ConnectAs(const PoolClientOptions& options,
                                                          bool* no_arena) {
  STRATA_ASSIGN_OR_RETURN(const PoolAddress address, ParsePoolAddress(options.socket_path));
  PoolHello hello = options.hello;
  std::optional<PoolSocket> opened;
  std::optional<Nonce> challenge;    // over TCP
  uint64_t connect_us = UINT64_MAX;  // over TCP: how long the connect took
  // Every step of the handshake shares one bound.
  const auto deadline =
      std::chrono::steady_clock::now() + options.connect_bound.value_or(options.answer_bound);
  const auto left = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now()));
  };
  if (address.tcp()) {
    if (!options.job_secret) {
      return Status::InvalidArgument("the pool at " + address.ToString() +
                                     " is over TCP: it needs the job secret (--job-secret-file "
                                     "or STRATA_JOB_SECRET)");
    }
    STRATA_ASSIGN_OR_RETURN(PoolTcpOpened tcp,
                            OpenPoolTcp(address, options.tls, options.answer_bound, deadline));
    connect_us = tcp.connect_us;
    challenge = tcp.challenge;
    hello.data_channel = options.data_path == PoolDataPath::kChannel ||
                         (options.data_path == PoolDataPath::kAuto && !SameHost(tcp.socket.fd()));
    opened.emplace(std::move(tcp.socket));
    STRATA_ASSIGN_OR_RETURN(hello.client_nonce, OsNonceSource()());
    hello.proof = ProvePoolHello(*options.job_secret, *challenge, hello);
  } else {
    STRATA_ASSIGN_OR_RETURN(wire::UniqueFd fd,
                            ConnectUnix(address.unix_path, options.answer_bound));
    opened.emplace(std::move(fd));
  }
  PoolSocket socket = std::move(*opened);
  const auto hello_sent = std::chrono::steady_clock::now();
  STRATA_RETURN_IF_ERROR(socket.Send(hello));
  STRATA_ASSIGN_OR_RETURN(PoolReceived received, socket.Receive(left()));
  // Each of the two is at least one round trip; the smaller is the estimate.
  const uint64_t round_trip_us = std::min(
      connect_us, static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                            std::chrono::steady_clock::now() - hello_sent)
                                            .count()));
  if (const auto* reject = std::get_if<PoolHelloReject>(&received.message)) {
    *no_arena = address.tcp() && !hello.data_channel &&
                reject->reason.find("--arena-file") != std::string::npos;
    return Status::FailedPrecondition("the pool rejected our Hello: " + reject->reason);
  }
  const auto* accept = std::get_if<PoolHelloAccept>(&received.message);
  if (accept != nullptr && hello.data_channel && !accept->data_token) {
    return Status::FailedPrecondition("the pool at " + address.ToString() +
                                      " did not grant the data channel");
  }
  const bool channel = hello.data_channel && accept != nullptr && accept->data_token.has_value();
  const bool arena_named = address.tcp() && received.fds.empty() && accept != nullptr &&
                           !hello.data_channel && !accept->arena_path.empty();
  if (accept == nullptr || (!channel && !arena_named && received.fds.size() != 1)) {
    return Status::Corruption("the pool answered Hello with something else");
  }
  if (address.tcp() &&
      !PoolAcceptProven(*options.job_secret, *hello.client_nonce, *challenge, *accept)) {
    // Not the manager (a process on its port while it is down?): map nothing it names.
    return Status::Unavailable("the pool at " + address.ToString() +
                               " did not prove the job secret in its HelloAccept");
  }
  PoolClientSlots slots;
  if (channel) {
    STRATA_ASSIGN_OR_RETURN(slots, OpenDataChannel(address, options, *accept));
  } else {
    slots.arena = options.reuse_arena;
    if (slots.arena == nullptr || options.reuse_generation != accept->generation ||
        slots.arena->slot_bytes() != accept->slot_bytes ||
        slots.arena->slot_count() != accept->slot_count) {
      wire::UniqueFd arena_fd;
      if (arena_named) {
        Result<wire::UniqueFd> opened_file = OpenArenaFile(accept->arena_path);
        *no_arena = !opened_file.ok();
        STRATA_ASSIGN_OR_RETURN(arena_fd, std::move(opened_file));
      } else {
        arena_fd = std::move(received.fds.front());
      }
      STRATA_ASSIGN_OR_RETURN(
          slots.arena, Arena::Map(std::move(arena_fd), accept->slot_bytes, accept->slot_count));
    }
    slots.puts = std::make_shared<MappedSlots>(slots.arena);
    slots.claims = slots.puts;
  }
  const uint64_t grace_us =
      options.lookup_bound
          ? static_cast<uint64_t>(std::chrono::microseconds(*options.lookup_bound).count())
      : address.tcp()
          ? LookupGraceUs(ManagerPlace::kNetwork, round_trip_us)
          : static_cast<uint64_t>(std::chrono::microseconds(options.answer_bound).count());
  return std::unique_ptr<PoolClient>(new PoolClient(std::move(socket), *accept, std::move(slots),
                                                    options, grace_us, round_trip_us));
}

}  // namespace strata::pool
