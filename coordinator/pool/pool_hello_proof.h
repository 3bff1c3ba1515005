// The job-secret rule of the pool's TCP control address (seed 2.15; docs/pool.md,
// "Protocol"): a TCP connection starts with the manager's Challenge, and the
// instance's Hello proves the job secret over it. A Unix socket needs no
// proof: it is owner-only (0600) on the manager's host. Pure: no I/O.
#pragma once

#include "coordinator/pool/pool_messages.h"
#include "coordinator/rendezvous/job_secret.h"
#include "coordinator/rendezvous/nonce.h"

namespace strata::pool {

// HMAC-SHA256(secret, "strata-pool-hello-v1" || nonce || model identity ||
// layout fingerprint || u32 page tokens): binds the proof to this
// connection's challenge and to the scope the Hello asks for.
HelloProof ProvePoolHello(const JobSecret& secret, const Nonce& challenge, const PoolHello& hello);

// Whether `hello` carries ProvePoolHello's proof for `challenge` (constant
// time); false when it carries none.
bool PoolHelloProven(const JobSecret& secret, const Nonce& challenge, const PoolHello& hello);

}  // namespace strata::pool
