// Rendezvous: how ranks in separate processes find rank zero before their
// record links exist (DESIGN.md "Rendezvous", seed 2.14). Rank zero gives each
// peer a nonce and the record-link address to dial: the local address of that
// peer's rendezvous connection (the interface the peer already reaches rank
// zero on) and rank zero's record listener port. Rank zero learns, per rank,
// the peer's address as its rendezvous connection showed it (the record link
// must come from there) and the nonce it issued. Every rank learns that all
// ranks agree on the world size; a rank whose world size differs is refused
// with a message naming both sizes.
//
// An embedding runtime supplies its own implementation; `strata rank` uses
// the TCP one (coordinator/rendezvous/tcp_rendezvous.h); tests use InProcessRendezvous.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/rendezvous/nonce.h"
#include "store/base/ids.h"
#include "store/base/status.h"

namespace strata {

using RendezvousClock = std::chrono::steady_clock;
using RendezvousDeadline = RendezvousClock::time_point;

// What rank zero knows about one peer after the rendezvous.
struct RendezvousPeer {
  RankId rank;
  // The peer's IP address (no port) as seen on its rendezvous connection.
  std::string address;
  // The nonce issued to this peer; its record-link hello must present it.
  Nonce nonce;
};

struct PeerTable {
  uint32_t world_size = 0;
  std::vector<RendezvousPeer> peers;  // ranks 1 .. world_size-1, in rank order

  // The entry for `rank`, or null (rank zero and ranks out of range).
  const RendezvousPeer* Find(RankId rank) const;
};

// What a peer gets from rank zero.
struct JoinTicket {
  uint32_t world_size = 0;   // equal to the peer's own: checked by both sides
  std::string record_host;   // rank zero's address to dial for the record link
  uint16_t record_port = 0;  // rank zero's record listener port
  Nonce nonce;               // present this on the record link
};

// Rank zero's side.
class RendezvousServer {
 public:
  virtual ~RendezvousServer() = default;
  // Blocks until every rank 1 .. world_size-1 has joined, then hands each its
  // ticket for `record_port` and returns what it learned. A hello with a
  // world size that differs, or a rank out of range or already taken, fails
  // that peer's Join with the reason; the TCP server keeps waiting for the
  // real peer (a stray process cannot stop a healthy cluster), the
  // in-process one, whose peers are all of one test, fails at once. Fails at
  // `deadline`, naming the ranks that did not join. Called once, from one
  // thread.
  virtual Result<PeerTable> AwaitPeers(uint32_t world_size, uint16_t record_port,
                                       RendezvousDeadline deadline) = 0;
};

// A peer's side (ranks 1 .. world_size-1).
class RendezvousClient {
 public:
  virtual ~RendezvousClient() = default;
  // Blocks until rank zero hands out tickets (every rank joined), retrying
  // while rank zero is not there yet, or until `deadline`. Fails with rank
  // zero's reason when it refuses this rank.
  virtual Result<JoinTicket> Join(RankId rank, uint32_t world_size,
                                  RendezvousDeadline deadline) = 0;
};

}  // namespace strata
