#include "coordinator/rendezvous/job_secret.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <iterator>

#include "store/base/assert.h"
#include "store/base/byte_writer.h"
#include "wire/tls.h"

namespace strata {

namespace {

constexpr std::string_view kProofLabel = "strata-rendezvous-hello-v2";
constexpr std::string_view kSecretFileKey = "cluster.job_secret_file";
constexpr std::string_view kSecretFileFlag = "--job-secret-file";

std::string_view TrimTrailingSpace(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' ||
                           text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text;
}

// At most kJobSecretBytesMax plus room for trailing whitespace, plus one byte
// so that a longer file is noticed without reading all of it.
Result<std::string> ReadBounded(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::InvalidArgument(std::string(kSecretFileKey) + ": cannot read '" + path + "'");
  }
  constexpr size_t kReadBytesMax = kJobSecretBytesMax + 64 + 1;
  std::string text(kReadBytesMax, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) {
    return Status::InvalidArgument(std::string(kSecretFileKey) + ": error reading '" + path + "'");
  }
  return text;
}

}  // namespace

Result<JobSecret> JobSecret::FromText(std::string_view text, std::string_view source) {
  const std::string_view trimmed = TrimTrailingSpace(text);
  if (trimmed.size() < kJobSecretBytesMin || trimmed.size() > kJobSecretBytesMax) {
    return Status::InvalidArgument(
        "job secret from " + std::string(source) + ": " + std::to_string(trimmed.size()) +
        " bytes; it must be " + std::to_string(kJobSecretBytesMin) + ".." +
        std::to_string(kJobSecretBytesMax) +
        " (make one with: head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n')");
  }
  return JobSecret(std::string(trimmed));
}

std::span<const uint8_t> JobSecret::bytes() const {
  return {reinterpret_cast<const uint8_t*>(bytes_.data()), bytes_.size()};
}

HelloProof ProveHello(const JobSecret& secret, const Nonce& challenge, RankId rank,
                      uint32_t world_size) {
  ByteWriter message;
  message.Bytes(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(kProofLabel.data()),
                                         kProofLabel.size()));
  message.Bytes(challenge.bytes);
  message.U32(rank.value);
  message.U32(world_size);
  return ProveMessage(secret, message.bytes());
}

HelloProof ProveMessage(const JobSecret& secret, std::span<const uint8_t> message) {
  HelloProof proof{};
  unsigned int proof_bytes = 0;
  const std::span<const uint8_t> key = secret.bytes();
  const uint8_t* out = HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), message.data(),
                            message.size(), proof.data(), &proof_bytes);
  STRATA_ASSERT(out != nullptr && proof_bytes == kHelloProofBytes, "HMAC-SHA256 failed");
  return proof;
}

bool MessageProven(const JobSecret& secret, std::span<const uint8_t> message,
                   const HelloProof& proof) {
  const HelloProof expected = ProveMessage(secret, message);
  return CRYPTO_memcmp(expected.data(), proof.data(), kHelloProofBytes) == 0;
}

bool HelloProven(const JobSecret& secret, const Nonce& challenge, RankId rank, uint32_t world_size,
                 const HelloProof& proof) {
  const HelloProof expected = ProveHello(secret, challenge, rank, world_size);
  return CRYPTO_memcmp(expected.data(), proof.data(), kHelloProofBytes) == 0;
}

Result<LoadedJobSecret> LoadJobSecret(const std::optional<std::string>& file, const EnvMap& env) {
  const auto var = env.find(kJobSecretEnvVar);
  const bool from_env = var != env.end();
  if (file.has_value() && from_env) {
    return Status::InvalidArgument(std::string(kSecretFileKey) + " and the environment variable " +
                                   std::string(kJobSecretEnvVar) +
                                   " are both set; give the job secret one way only");
  }
  if (from_env) {
    const std::string source = "environment " + std::string(kJobSecretEnvVar);
    STRATA_ASSIGN_OR_RETURN(JobSecret secret, JobSecret::FromText(var->second, source));
    return LoadedJobSecret{std::move(secret), source, {}};
  }
  if (!file.has_value()) {
    return Status::InvalidArgument(
        "ranks in separate processes need a job secret, which every rendezvous hello proves: "
        "set " +
        std::string(kSecretFileFlag) + " (" + std::string(kSecretFileKey) +
        ") to a file only this job's ranks can read, or the environment variable " +
        std::string(kJobSecretEnvVar) +
        ", the same on every rank (docs/operations.md, "
        "\"Job secret\")");
  }
  STRATA_ASSIGN_OR_RETURN(std::string text, ReadBounded(*file));
  const std::string source = "file '" + *file + "'";
  STRATA_ASSIGN_OR_RETURN(JobSecret secret, JobSecret::FromText(text, source));
  LoadedJobSecret loaded{std::move(secret), source, {}};
  if (std::optional<std::string> w = wire::PrivateFileWarning(*file, "job secret")) {
    loaded.warnings.push_back(std::move(*w));
  }
  return loaded;
}

Result<JobSecret> ReadJobSecret(const std::optional<std::string>& file) {
  STRATA_ASSIGN_OR_RETURN(LoadedJobSecret loaded, LoadJobSecret(file, CurrentEnvironment()));
  for (const std::string& w : loaded.warnings) spdlog::warn("{}", w);
  spdlog::info("rendezvous hellos prove the job secret from {}", loaded.source);
  return std::move(loaded.secret);
}

}  // namespace strata
