// A private key file its group or others can access is loaded, with a
// warning naming the file and its mode; a 0600 key gives none.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/unit/store/record/record_test_support.h"
#include "tests/unit/wire/tls_test_certs.h"
#include "wire/tls.h"

namespace strata {
namespace {

using testing::ConfigOf;
using ::testing::HasSubstr;
using testing::Issue;
using testing::Issued;
using testing::ScratchDir;

TEST(TlsKeyMode, APrivateKeyGivesNoWarning) {
  ScratchDir dir;
  Issued ca = Issue(dir.path(), "ca", nullptr);
  Issued rank = Issue(dir.path(), "rank", &ca);
  Result<std::shared_ptr<const wire::TlsContext>> made =
      wire::TlsContext::Create(ConfigOf(rank, ca));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_TRUE((*made)->warnings().empty());
}

TEST(TlsKeyMode, AKeyOthersCanReadIsWarnedAbout) {
  for (mode_t mode : {0640, 0604, 0660}) {
    ScratchDir dir;
    Issued ca = Issue(dir.path(), "ca", nullptr);
    Issued rank = Issue(dir.path(), "rank", &ca);
    ASSERT_EQ(chmod(rank.key_file.c_str(), mode), 0);
    Result<std::shared_ptr<const wire::TlsContext>> made =
        wire::TlsContext::Create(ConfigOf(rank, ca));
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    ASSERT_EQ((*made)->warnings().size(), 1u) << std::oct << mode;
    EXPECT_THAT((*made)->warnings()[0], HasSubstr("private key '" + rank.key_file + "'"));
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode));
    EXPECT_THAT((*made)->warnings()[0], HasSubstr(std::string("has mode ") + octal));
  }
}

TEST(TlsKeyMode, PrivateFileWarningIgnoresOwnerBitsAndMissingFiles) {
  ScratchDir dir;
  const std::string path = dir.path() + "/f";
  std::fclose(std::fopen(path.c_str(), "w"));
  ASSERT_EQ(chmod(path.c_str(), 0700), 0);
  EXPECT_FALSE(wire::PrivateFileWarning(path, "job secret").has_value());
  ASSERT_EQ(chmod(path.c_str(), 0601), 0);
  EXPECT_TRUE(wire::PrivateFileWarning(path, "job secret").has_value());
  EXPECT_FALSE(wire::PrivateFileWarning(dir.path() + "/missing", "job secret").has_value());
}

}  // namespace
}  // namespace strata
