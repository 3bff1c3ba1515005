// The job secret: bytes every process of one job shares and no other process
// has (DESIGN.md "Membership"). Every rendezvous hello proves it with
// HMAC-SHA256 over a fresh challenge from rank zero and the hello's fields
// (ProveHello), so a stray or stale process of another job, or a stranger,
// cannot take a rank. It comes from a file (cluster.job_secret_file,
// --job-secret-file) or the environment (STRATA_JOB_SECRET);
// docs/operations.md says how to make, pass and rotate one.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/rendezvous/launcher_env.h"
#include "coordinator/rendezvous/nonce.h"
#include "store/base/ids.h"
#include "store/base/status.h"

namespace strata {

// Bounds on a secret's length in bytes (after trailing whitespace is cut).
// 32 characters: 128 bits as hex; the launch scripts make 64.
inline constexpr size_t kJobSecretBytesMin = 32;
inline constexpr size_t kJobSecretBytesMax = 4096;
inline constexpr std::string_view kJobSecretEnvVar = "STRATA_JOB_SECRET";

// HMAC-SHA256 output.
inline constexpr size_t kHelloProofBytes = 32;
using HelloProof = std::array<uint8_t, kHelloProofBytes>;

// The secret's bytes, opaque. Never printed: no accessor gives text.
class JobSecret {
 public:
  // `text` with trailing whitespace (a file's newline) cut. kInvalidArgument,
  // naming `source` (where the text came from) but never the text, when it is
  // shorter than kJobSecretBytesMin or longer than kJobSecretBytesMax.
  static Result<JobSecret> FromText(std::string_view text, std::string_view source);

  std::span<const uint8_t> bytes() const;

 private:
  explicit JobSecret(std::string bytes) : bytes_(std::move(bytes)) {}
  std::string bytes_;
};

// The proof a hello from `rank` of `world_size` carries on a connection whose
// challenge was `challenge`: HMAC-SHA256(secret, "strata-rendezvous-hello-v2"
// || challenge || u32 rank || u32 world_size), integers little-endian
// (docs/wire.md, "Rendezvous protocol").
HelloProof ProveHello(const JobSecret& secret, const Nonce& challenge, RankId rank,
                      uint32_t world_size);

// HMAC-SHA256(secret, message): the proof of any handshake that names its
// own label and fields in `message` (ProveHello's, the pool's Hello).
HelloProof ProveMessage(const JobSecret& secret, std::span<const uint8_t> message);
// Whether `proof` is ProveMessage's for `message`; compared in constant time.
bool MessageProven(const JobSecret& secret, std::span<const uint8_t> message,
                   const HelloProof& proof);

// Whether `proof` is ProveHello's for these fields; compared in constant time.
bool HelloProven(const JobSecret& secret, const Nonce& challenge, RankId rank, uint32_t world_size,
                 const HelloProof& proof);

// A secret and where it came from ("file /run/job.secret" or "environment
// STRATA_JOB_SECRET"), with warnings for the operator (a file readable by
// its group or others).
struct LoadedJobSecret {
  JobSecret secret;
  std::string source;
  std::vector<std::string> warnings;
};

// Reads the secret from `file` when set, else from env[STRATA_JOB_SECRET].
// kInvalidArgument, naming the setting: both given (which one is meant is
// unclear), neither given (a multi-process job needs one; the message names
// --job-secret-file, cluster.job_secret_file and STRATA_JOB_SECRET), a file
// that cannot be read, or a secret of the wrong length.
Result<LoadedJobSecret> LoadJobSecret(const std::optional<std::string>& file, const EnvMap& env);

// This process's secret: LoadJobSecret over CurrentEnvironment(), with where
// it came from and each warning logged. The shell edge.
Result<JobSecret> ReadJobSecret(const std::optional<std::string>& file);

}  // namespace strata
