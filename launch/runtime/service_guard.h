// What the runtime service (runtime_service.h) admits, as pure decisions:
// the per-job token every request carries, and the largest body a PUT may
// have. No sockets here; the service and its client apply these.
//
// The token is HMAC-SHA256(job secret, kRuntimeServiceTokenLabel), as lower
// case hex. Every process of a job holds the job secret
// (coordinator/rendezvous/job_secret.h), so each derives the same token with
// nothing more to exchange, and a process without the secret cannot. The
// label keeps it apart from the rendezvous proofs, which use their own label
// and a fresh challenge. It travels as "Authorization: Bearer <token>" over
// plaintext HTTP: whoever can read the traffic can replay it, which is why
// the service binds loopback unless runtime.service_bind says otherwise
// (docs/operations.md, "Runtime service").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "coordinator/rendezvous/job_secret.h"
#include "store/record/geometry.h"

namespace strata {

inline constexpr std::string_view kRuntimeServiceTokenLabel = "strata-runtime-service-token-v1";
inline constexpr std::string_view kRuntimeServiceAuthHeader = "Authorization";
inline constexpr std::string_view kRuntimeServiceAuthScheme = "Bearer ";

// HMAC-SHA256(job secret, `label`) as 64 lower case hex characters: a
// token every process of the job derives alone, one per purpose (label).
std::string JobToken(const JobSecret& secret, std::string_view label);
// The job's runtime service token: JobToken under kRuntimeServiceTokenLabel.
std::string RuntimeServiceToken(const JobSecret& secret);
// Whether `presented` is `token`, compared in constant time.
bool TokenMatches(std::string_view presented, std::string_view token);

enum class ServiceAdmission : unsigned char {
  kAdmit,
  kNoToken,     // no Authorization header, or not "Bearer <token>": 401
  kWrongToken,  // a bearer token that is not the job's: 403
};

// Whether `authorization` (the request's Authorization header, empty when
// absent) carries `token`. The tokens are compared in constant time.
ServiceAdmission AdmitRequest(std::string_view authorization, std::string_view token);

// The largest body a PUT to the service may carry: the largest unit one
// request writes, the largest page plane's unit or the state row's.
uint64_t RuntimeServiceBodyMax(const RankGeometry& geometry);

}  // namespace strata
