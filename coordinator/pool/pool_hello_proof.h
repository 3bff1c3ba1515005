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
// layout fingerprint || u32 page tokens || u8 data channel asked): binds the
// proof to this connection's challenge, the scope the Hello asks for and
// the way to the slots it asks for.
HelloProof ProvePoolHello(const JobSecret& secret, const Nonce& challenge, const PoolHello& hello);

// Whether `hello` carries ProvePoolHello's proof for `challenge` (constant
// time); false when it carries none.
bool PoolHelloProven(const JobSecret& secret, const Nonce& challenge, const PoolHello& hello);

// The manager's proof in its HelloAccept over TCP, so that an instance maps
// no file a process without the secret named (a squatter on the port while
// the manager is down): HMAC-SHA256(secret, "strata-pool-accept-v1" ||
// client nonce || challenge || u64 generation || u64 slot bytes || u32 slot
// count || scope || instance || u32 arena path length || its bytes || u8
// data token present || the token || u64 window bytes || u32 window credits).
HelloProof ProvePoolAccept(const JobSecret& secret, const Nonce& client_nonce,
                           const Nonce& challenge, const PoolHelloAccept& accept);
// Whether `accept` carries ProvePoolAccept's proof (constant time).
bool PoolAcceptProven(const JobSecret& secret, const Nonce& client_nonce, const Nonce& challenge,
                      const PoolHelloAccept& accept);

// A data connection's proof (DataHello): HMAC-SHA256(secret,
// "strata-pool-data-v1" || that connection's challenge || instance || the
// session's data token), so that only a process with the secret that was
// told the token opens a data connection of that session.
HelloProof ProvePoolData(const JobSecret& secret, const Nonce& challenge,
                         const InstanceId& instance, const DataToken& token);
// Whether `hello` carries ProvePoolData's proof for `challenge` (constant time).
bool PoolDataProven(const JobSecret& secret, const Nonce& challenge, const PoolDataHello& hello);

}  // namespace strata::pool
