// Rank zero's decision on a peer's Hello (seed 2.14), as pure logic: who may
// join, and which mismatches fail startup. No sockets or clocks.
//
// A Hello that cannot be shown to come from the rank it claims (rank out of
// range, a nonce that is not the one the rendezvous issued to that rank, a
// connection from another address than that rank's rendezvous connection,
// a rank already joined) only gets its link rejected: a stray or stale
// process must not stop a healthy cluster from starting. A Hello that
// proves its rank (nonce and address match) but disagrees with rank zero
// (protocol version, world size, layout fingerprint, disk store settings)
// fails startup: the ranks are misconfigured and would never match.
#pragma once

#include <string>
#include <vector>

#include "coordinator/rendezvous/rendezvous.h"
#include "store/base/digest.h"
#include "wire/messages.h"

namespace strata {

// What a peer's Hello is compared against.
struct RankZeroFacts {
  uint32_t world_size = 0;
  // ComputeLayoutFingerprint of rank zero's own rank geometry alone: every
  // rank's must be equal (the same plane and row sizes).
  Digest128 layout_fingerprint{};
  bool has_disk_store = true;
};

enum class HelloVerdict : unsigned char {
  kAccept,
  kRejectLink,   // refuse this connection; startup goes on
  kFailStartup,  // refuse it and fail startup with the reason
};

struct HelloDecision {
  HelloVerdict verdict = HelloVerdict::kAccept;
  std::string reason;  // why not, naming the rank, the address and the values
};

// `from_address` is the connecting IP as the listener saw it; `peers` what
// the rendezvous learned; `joined[r]` whether rank r was accepted already.
HelloDecision CheckHello(const wire::Hello& hello, const std::string& from_address,
                         const PeerTable& peers, const std::vector<bool>& joined,
                         const RankZeroFacts& self);

}  // namespace strata
