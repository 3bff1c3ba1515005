#include "coordinator/rendezvous/job_secret.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ScratchDir;

const std::string kSecretText(kJobSecretBytesMin, 's');

JobSecret Secret(char fill = 's') {
  return *JobSecret::FromText(std::string(kJobSecretBytesMin, fill), "test");
}

Nonce Challenge() {
  Nonce n;
  for (size_t i = 0; i < kNonceBytes; ++i) n.bytes[i] = static_cast<uint8_t>(i + 1);
  return n;
}

std::string Hex(const HelloProof& p) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : p) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  return out;
}

std::string WriteFile(const ScratchDir& dir, const std::string& text, mode_t mode) {
  const std::string path = dir.path() + "/job.secret";
  std::ofstream(path, std::ios::trunc) << text;
  EXPECT_EQ(chmod(path.c_str(), mode), 0);
  return path;
}

// The HMAC-SHA256 docs/wire.md specifies, computed independently (Python's
// hmac over "strata-rendezvous-hello-v2" || challenge || u32 3 || u32 8).
TEST(JobSecretTest, ProofIsTheSpecifiedHmac) {
  EXPECT_EQ(Hex(ProveHello(Secret(), Challenge(), RankId(3), 8)),
            "c6aa0a58fe22744a8273d5d36d55202015a6a3a409a3b02571458d8c99aa32fa");
}

TEST(JobSecretTest, ProofCoversTheSecretTheChallengeAndEveryField) {
  const HelloProof proof = ProveHello(Secret(), Challenge(), RankId(3), 8);
  EXPECT_TRUE(HelloProven(Secret(), Challenge(), RankId(3), 8, proof));
  EXPECT_FALSE(HelloProven(Secret('x'), Challenge(), RankId(3), 8, proof));
  Nonce other = Challenge();
  other.bytes[0] ^= 1;
  EXPECT_FALSE(HelloProven(Secret(), other, RankId(3), 8, proof));
  EXPECT_FALSE(HelloProven(Secret(), Challenge(), RankId(2), 8, proof));
  EXPECT_FALSE(HelloProven(Secret(), Challenge(), RankId(3), 9, proof));
  HelloProof flipped = proof;
  flipped[31] ^= 0x80;
  EXPECT_FALSE(HelloProven(Secret(), Challenge(), RankId(3), 8, flipped));
}

TEST(JobSecretTest, LengthBoundsAndTrailingNewline) {
  EXPECT_TRUE(JobSecret::FromText(kSecretText + "\n", "test").ok());
  EXPECT_EQ(JobSecret::FromText(kSecretText + " \r\n", "test")->bytes().size(), kJobSecretBytesMin);
  Result<JobSecret> short_secret =
      JobSecret::FromText(std::string(kJobSecretBytesMin - 1, 'a') + "\n", "file 'x'");
  ASSERT_FALSE(short_secret.ok());
  EXPECT_EQ(short_secret.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(short_secret.status().message(), HasSubstr("job secret from file 'x': 31 bytes"));
  EXPECT_THAT(short_secret.status().message(), Not(HasSubstr("aaaa")));  // never echoed
  EXPECT_FALSE(JobSecret::FromText(std::string(kJobSecretBytesMax + 1, 'a'), "test").ok());
  EXPECT_TRUE(JobSecret::FromText(std::string(kJobSecretBytesMax, 'a'), "test").ok());
}

TEST(JobSecretTest, NeitherFileNorEnvironmentNamesBoth) {
  Result<LoadedJobSecret> s = LoadJobSecret(std::nullopt, {});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("--job-secret-file"));
  EXPECT_THAT(s.status().message(), HasSubstr("cluster.job_secret_file"));
  EXPECT_THAT(s.status().message(), HasSubstr("STRATA_JOB_SECRET"));
}

TEST(JobSecretTest, BothFileAndEnvironmentIsRefused) {
  ScratchDir dir;
  const std::string path = WriteFile(dir, kSecretText, 0600);
  Result<LoadedJobSecret> s = LoadJobSecret(path, {{"STRATA_JOB_SECRET", kSecretText}});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("both set"));
}

TEST(JobSecretTest, FromTheEnvironment) {
  Result<LoadedJobSecret> s = LoadJobSecret(std::nullopt, {{"STRATA_JOB_SECRET", kSecretText}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->source, "environment STRATA_JOB_SECRET");
  EXPECT_TRUE(s->warnings.empty());
  const HelloProof p = ProveHello(s->secret, Challenge(), RankId(1), 2);
  EXPECT_TRUE(HelloProven(Secret(), Challenge(), RankId(1), 2, p));
}

TEST(JobSecretTest, FromAPrivateFile) {
  ScratchDir dir;
  const std::string path = WriteFile(dir, kSecretText + "\n", 0600);
  Result<LoadedJobSecret> s = LoadJobSecret(path, {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->source, "file '" + path + "'");
  EXPECT_TRUE(s->warnings.empty());
  const HelloProof p = ProveHello(s->secret, Challenge(), RankId(1), 2);
  EXPECT_TRUE(HelloProven(Secret(), Challenge(), RankId(1), 2, p));
}

TEST(JobSecretTest, AFileOthersCanReadIsUsedWithAWarning) {
  ScratchDir dir;
  const std::string path = WriteFile(dir, kSecretText, 0644);
  Result<LoadedJobSecret> s = LoadJobSecret(path, {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->warnings.size(), 1u);
  EXPECT_THAT(s->warnings[0], HasSubstr("job secret '" + path + "' has mode 0644"));
}

TEST(JobSecretTest, AMissingFileIsNamed) {
  Result<LoadedJobSecret> s = LoadJobSecret("/nonexistent/job.secret", {});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(),
              HasSubstr("cluster.job_secret_file: cannot read '/nonexistent/job.secret'"));
}

}  // namespace
}  // namespace strata
