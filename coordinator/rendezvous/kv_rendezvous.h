// The rendezvous over a key-value store the job's processes already share
// (an inference runtime's torch.distributed.Store: TCPStore, FileStore,
// HashStore), so Strata needs no rendezvous port of its own next to the
// runtime's. The record links still use Strata's TCP listener; only the
// exchange of addresses and nonces goes through the store. The store is the
// trust boundary: whoever can write it can take a rank (the runtime's own
// ranks already trust it with everything).
//
// Keys (all under `prefix`, values ASCII text; docs/python.md):
//   <prefix>zero          "strata-kv-v1 <world_size> <record_host> <record_port>"
//                         rank zero, first
//   <prefix>hello/<rank>  "strata-kv-v1 <world_size> <address>"
//                         each peer, once it read `zero`: the address it
//                         reaches record_host from (its record link's source)
//   <prefix>ticket/<rank> "ok <nonce hex>" | "refused <reason>"
//                         rank zero, once every peer said hello (or one was
//                         refused: every waiting peer then reads the reason)
// A prefix serves one rendezvous: a job that restarts uses a fresh store or
// a fresh prefix.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "coordinator/rendezvous/rendezvous.h"

namespace strata {

// A shared key-value store with a blocking read. Implementations: a Python
// object with set/get (python/), the in-memory double of the tests.
// Thread: one call at a time per rendezvous object; an implementation may be
// shared by several if it is thread-safe.
class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  virtual Status Set(const std::string& key, const std::string& value) = 0;
  // The value of `key`, waiting until another process sets it. kUnavailable
  // when `deadline` passes first (the message need not name the key: the
  // caller adds it); other errors are the store's own.
  virtual Result<std::string> Get(const std::string& key, RendezvousDeadline deadline) = 0;
};

// The local address this host uses toward `host` (the source of a
// connection to it), numeric.
using LocalAddressFn = std::function<Result<std::string>(const std::string& host)>;

// The kernel's answer: a UDP socket connected to host (no packet is sent),
// then getsockname.
LocalAddressFn RoutedLocalAddress();

inline constexpr std::string_view kKvRendezvousVersion = "strata-kv-v1";

// Rank zero's side. Writes `zero`, reads every peer's hello in rank order
// (a peer's hello is checked by RendezvousRoster: world size, range), then
// writes every ticket. A refused hello writes "refused" tickets for every
// peer and fails; the deadline fails naming the ranks that did not join.
class KvRendezvousServer final : public RendezvousServer {
 public:
  // `record_host` is what peers dial (rank zero's record listener address).
  KvRendezvousServer(KeyValueStore& store, std::string prefix, std::string record_host,
                     NonceSource nonces);
  Result<PeerTable> AwaitPeers(uint32_t world_size, uint16_t record_port,
                               RendezvousDeadline deadline) override;

 private:
  Status RefuseAll(uint32_t world_size, const Status& why);

  KeyValueStore& store_;
  const std::string prefix_;
  const std::string record_host_;
  NonceSource nonces_;
};

// A peer's side: reads `zero`, says hello from the address it reaches rank
// zero from, waits for its ticket.
class KvRendezvousClient final : public RendezvousClient {
 public:
  KvRendezvousClient(KeyValueStore& store, std::string prefix, LocalAddressFn local_address);
  Result<JoinTicket> Join(RankId rank, uint32_t world_size, RendezvousDeadline deadline) override;

 private:
  KeyValueStore& store_;
  const std::string prefix_;
  LocalAddressFn local_address_;
};

}  // namespace strata
