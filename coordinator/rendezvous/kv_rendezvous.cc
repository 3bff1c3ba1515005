#include "coordinator/rendezvous/kv_rendezvous.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <sstream>
#include <utility>
#include <vector>

#include "coordinator/rendezvous/rendezvous_roster.h"

namespace strata {

namespace {

constexpr std::string_view kTicketOk = "ok";
constexpr std::string_view kTicketRefused = "refused";

std::string ZeroKey(const std::string& prefix) { return prefix + "zero"; }
std::string HelloKey(const std::string& prefix, uint32_t rank) {
  return prefix + "hello/" + std::to_string(rank);
}
std::string TicketKey(const std::string& prefix, uint32_t rank) {
  return prefix + "ticket/" + std::to_string(rank);
}

std::vector<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(std::move(w));
  return out;
}

template <typename T>
Result<T> ParseNumber(const std::string& word, std::string_view what) {
  T value{};
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc() || end != word.data() + word.size()) {
    return Status::InvalidArgument(std::string(what) + " '" + word + "' is not a number");
  }
  return value;
}

Result<Nonce> ParseNonce(const std::string& hex) {
  Nonce n;
  if (hex.size() != 2 * kNonceBytes) return Status::InvalidArgument("nonce of the wrong length");
  for (size_t i = 0; i < kNonceBytes; ++i) {
    auto [end, ec] = std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, n.bytes[i], 16);
    if (ec != std::errc() || end != hex.data() + 2 * i + 2) {
      return Status::InvalidArgument("nonce is not hex");
    }
  }
  return n;
}

// "strata-kv-v1 <world_size> <rest...>": the world size and the rest.
Result<std::pair<uint32_t, std::vector<std::string>>> ParseVersioned(const std::string& value,
                                                                     size_t rest_words,
                                                                     std::string_view what) {
  std::vector<std::string> w = Words(value);
  if (w.size() != 2 + rest_words || w[0] != kKvRendezvousVersion) {
    return Status::InvalidArgument(std::string(what) + " is not a " +
                                   std::string(kKvRendezvousVersion) + " record: '" + value + "'");
  }
  STRATA_ASSIGN_OR_RETURN(uint32_t world, ParseNumber<uint32_t>(w[1], "world size"));
  return std::make_pair(world, std::vector<std::string>(w.begin() + 2, w.end()));
}

// A Get whose timeout names what was awaited.
Result<std::string> GetNamed(KeyValueStore& store, const std::string& key,
                             RendezvousDeadline deadline, const std::string& waiting_for) {
  Result<std::string> v = store.Get(key, deadline);
  if (!v.ok() && v.status().code() == StatusCode::kUnavailable) {
    return Status::Unavailable("rendezvous deadline passed waiting for " + waiting_for + " (key '" +
                               key + "')");
  }
  return v;
}

}  // namespace

LocalAddressFn RoutedLocalAddress() {
  return [](const std::string& host) -> Result<std::string> {
    addrinfo hints{};
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICHOST;
    addrinfo* found = nullptr;
    if (int rc = getaddrinfo(host.c_str(), "9", &hints, &found); rc != 0) {
      return Status::InvalidArgument("record host '" + host + "': " + gai_strerror(rc));
    }
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(found, freeaddrinfo);
    const int fd = socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Status::FromErrno(errno, "socket");
    Status s;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (connect(fd, found->ai_addr, found->ai_addrlen) != 0) {
      s = Status::FromErrno(errno, "route toward " + host);
    } else if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      s = Status::FromErrno(errno, "getsockname");
    }
    close(fd);
    STRATA_RETURN_IF_ERROR(s);
    char text[INET6_ADDRSTRLEN] = {};
    const void* addr =
        local.ss_family == AF_INET6
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
    if (inet_ntop(local.ss_family, addr, text, sizeof(text)) == nullptr) {
      return Status::FromErrno(errno, "inet_ntop");
    }
    return std::string(text);
  };
}

KvRendezvousServer::KvRendezvousServer(KeyValueStore& store, std::string prefix,
                                       std::string record_host, NonceSource nonces)
    : store_(store),
      prefix_(std::move(prefix)),
      record_host_(std::move(record_host)),
      nonces_(std::move(nonces)) {}

Status KvRendezvousServer::RefuseAll(uint32_t world_size, const Status& why) {
  for (uint32_t r = 1; r < world_size; ++r) {
    STRATA_RETURN_IF_ERROR(
        store_.Set(TicketKey(prefix_, r), std::string(kTicketRefused) + " " + why.message()));
  }
  return Status::Ok();
}

Result<PeerTable> KvRendezvousServer::AwaitPeers(uint32_t world_size, uint16_t record_port,
                                                 RendezvousDeadline deadline) {
  RendezvousRoster roster(world_size);
  STRATA_RETURN_IF_ERROR(store_.Set(
      ZeroKey(prefix_), std::string(kKvRendezvousVersion) + " " + std::to_string(world_size) + " " +
                            record_host_ + " " + std::to_string(record_port)));
  for (uint32_t r = 1; r < world_size; ++r) {
    Result<std::string> hello = store_.Get(HelloKey(prefix_, r), deadline);
    if (!hello.ok() && hello.status().code() == StatusCode::kUnavailable) {
      // Later ranks that did arrive still count in the message.
      for (uint32_t later = r + 1; later < world_size; ++later) {
        Result<std::string> h = store_.Get(HelloKey(prefix_, later), RendezvousClock::now());
        if (!h.ok()) continue;
        Result<std::pair<uint32_t, std::vector<std::string>>> p = ParseVersioned(*h, 1, "hello");
        if (p.ok()) (void)roster.Admit(RankId(later), p->first, p->second[0], Nonce{});
      }
      Status late = Status::Unavailable("rendezvous deadline passed: " + roster.MissingSummary());
      (void)RefuseAll(world_size, late);
      return late;
    }
    STRATA_RETURN_IF_ERROR(hello.status());
    Status admitted;
    Result<std::pair<uint32_t, std::vector<std::string>>> parsed =
        ParseVersioned(*hello, 1, "rank " + std::to_string(r) + "'s hello");
    if (!parsed.ok()) {
      admitted = parsed.status();
    } else {
      Result<Nonce> nonce = nonces_();
      admitted = nonce.ok() ? roster.Admit(RankId(r), parsed->first, parsed->second[0], *nonce)
                            : nonce.status();
    }
    if (!admitted.ok()) {
      (void)RefuseAll(world_size, admitted);
      return admitted;
    }
  }
  for (const RendezvousPeer& p : roster.Table().peers) {
    STRATA_RETURN_IF_ERROR(store_.Set(TicketKey(prefix_, p.rank.value),
                                      std::string(kTicketOk) + " " + NonceHex(p.nonce)));
  }
  return roster.Table();
}

KvRendezvousClient::KvRendezvousClient(KeyValueStore& store, std::string prefix,
                                       LocalAddressFn local_address)
    : store_(store), prefix_(std::move(prefix)), local_address_(std::move(local_address)) {}

Result<JoinTicket> KvRendezvousClient::Join(RankId rank, uint32_t world_size,
                                            RendezvousDeadline deadline) {
  const std::string me = "rank " + std::to_string(rank.value);
  STRATA_ASSIGN_OR_RETURN(std::string zero,
                          GetNamed(store_, ZeroKey(prefix_), deadline, "rank zero (" + me + ")"));
  STRATA_ASSIGN_OR_RETURN(auto parsed, ParseVersioned(zero, 2, "rank zero's record"));
  JoinTicket ticket;
  ticket.world_size = parsed.first;
  ticket.record_host = parsed.second[0];
  STRATA_ASSIGN_OR_RETURN(ticket.record_port,
                          ParseNumber<uint16_t>(parsed.second[1], "record port"));
  STRATA_ASSIGN_OR_RETURN(std::string address, local_address_(ticket.record_host));
  // Said even when the world sizes differ, so rank zero fails naming both.
  STRATA_RETURN_IF_ERROR(store_.Set(
      HelloKey(prefix_, rank.value),
      std::string(kKvRendezvousVersion) + " " + std::to_string(world_size) + " " + address));
  if (ticket.world_size != world_size) {
    return Status::InvalidArgument(me + " has world size " + std::to_string(world_size) +
                                   ", rank zero has " + std::to_string(ticket.world_size));
  }
  STRATA_ASSIGN_OR_RETURN(std::string answer, GetNamed(store_, TicketKey(prefix_, rank.value),
                                                       deadline, me + "'s ticket from rank zero"));
  std::vector<std::string> w = Words(answer);
  if (w.size() == 2 && w[0] == kTicketOk) {
    STRATA_ASSIGN_OR_RETURN(ticket.nonce, ParseNonce(w[1]));
    return ticket;
  }
  if (answer.starts_with(kTicketRefused)) {
    return Status::FailedPrecondition(
        me + " refused by rank zero: " + answer.substr(kTicketRefused.size() + 1));
  }
  return Status::InvalidArgument(me + ": malformed ticket '" + answer + "'");
}

}  // namespace strata
