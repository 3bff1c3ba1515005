#include "coordinator/hello_check.h"

namespace strata {
namespace {

HelloDecision Reject(std::string reason) { return {HelloVerdict::kRejectLink, std::move(reason)}; }
HelloDecision Fail(std::string reason) { return {HelloVerdict::kFailStartup, std::move(reason)}; }

}  // namespace

HelloDecision CheckHello(const wire::Hello& hello, const std::string& from_address,
                         const PeerTable& peers, const std::vector<bool>& joined,
                         const RankZeroFacts& self) {
  const std::string who =
      "Hello from " + from_address + " claiming rank " + std::to_string(hello.rank.value);
  if (hello.rank.value == 0) return Reject(who + ": rank 0 is rank zero itself");
  if (hello.rank.value >= self.world_size) {
    return Reject(who + ": out of range for rank zero's world size " +
                  std::to_string(self.world_size));
  }
  const RendezvousPeer* peer = peers.Find(hello.rank);
  if (peer == nullptr) return Reject(who + ": that rank did not join the rendezvous");
  if (hello.nonce != peer->nonce.bytes) {
    return Reject(who + ": wrong nonce (not the one the rendezvous issued to rank " +
                  std::to_string(hello.rank.value) + ")");
  }
  if (from_address != peer->address) {
    return Reject(who + ": wrong address (rank " + std::to_string(hello.rank.value) +
                  "'s rendezvous connection came from " + peer->address + ")");
  }
  if (hello.rank.value < joined.size() && joined[hello.rank.value]) {
    return Reject(who + ": rank " + std::to_string(hello.rank.value) + " has already joined");
  }
  const std::string rank = "rank " + std::to_string(hello.rank.value);
  if (hello.protocol_version != wire::kProtocolVersion) {
    return Fail(rank + " speaks protocol version " + std::to_string(hello.protocol_version) +
                ", rank zero " + std::to_string(wire::kProtocolVersion));
  }
  if (hello.world_size != self.world_size) {
    return Fail(rank + " has world size " + std::to_string(hello.world_size) + ", rank zero " +
                std::to_string(self.world_size));
  }
  if (hello.layout_fingerprint != self.layout_fingerprint) {
    return Fail(rank + "'s layout fingerprint " + ToHex(hello.layout_fingerprint) +
                " differs from rank zero's " + ToHex(self.layout_fingerprint) +
                ": the ranks' page planes or row sizes differ, so their records would never "
                "match");
  }
  if (hello.has_disk_store != self.has_disk_store) {
    return Fail(rank + (hello.has_disk_store ? " has" : " has no") + " disk store but rank zero " +
                (self.has_disk_store ? "has one" : "has none") +
                ": every rank must have a disk store, or none");
  }
  if (hello.has_disk_store && hello.disk_limit_bytes == 0) {
    return Fail(rank + " has a disk store with a zero disk limit");
  }
  return {HelloVerdict::kAccept, ""};
}

}  // namespace strata
