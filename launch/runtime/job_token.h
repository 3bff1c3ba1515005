// The per-job tokens of the runtime processes' channels, as pure functions:
// HMAC-SHA256(job secret, label), as lower case hex. Every process of a job
// holds the job secret (coordinator/rendezvous/job_secret.h), so each derives
// the same token with nothing more to exchange, and a process without the
// secret cannot. One label per purpose keeps the tokens apart from each
// other and from the rendezvous proofs (their own label, a fresh challenge).
// The lockstep channel (runtime_lockstep.h) uses kLockstepTokenLabel.
#pragma once

#include <string>
#include <string_view>

#include "coordinator/rendezvous/job_secret.h"

namespace strata {

// HMAC-SHA256(job secret, `label`) as 64 lower case hex characters: a
// token every process of the job derives alone, one per purpose (label).
std::string JobToken(const JobSecret& secret, std::string_view label);
// Whether `presented` is `token`, compared in constant time.
bool TokenMatches(std::string_view presented, std::string_view token);

}  // namespace strata
