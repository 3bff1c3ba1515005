// Strata's fixed cuFile policy (seed 2.6) and the library's absence.
#include "cuda/cufile_policy.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cuda/cufile_api.h"
#include "cuda/gds_host_facts.h"

namespace strata {
namespace {

TEST(CuFilePolicyTest, ServingPolicyRefusesCompatModeAndSizesOneWindowEntry) {
  const std::string json = CuFilePolicyJson(CuFilePolicy{});
  EXPECT_NE(json.find("\"allow_compat_mode\": false"), std::string::npos) << json;
  // A 16 MiB entry is one I/O.
  EXPECT_NE(json.find("\"max_direct_io_size_kb\": 16384"), std::string::npos) << json;
  EXPECT_NE(json.find("\"max_batch_io_size\": 128"), std::string::npos) << json;
}

TEST(CuFilePolicyTest, TestSwitchAllowsCompatMode) {
  CuFilePolicy policy;
  policy.compat = CompatMode::kAllowedForTests;
  const std::string json = CuFilePolicyJson(policy);
  EXPECT_NE(json.find("\"allow_compat_mode\": true"), std::string::npos) << json;
}

TEST(CuFilePolicyTest, InstallWritesAPrivateFileAndSetsTheVariable) {
  const std::string dir = ::testing::TempDir() + "/cufile_policy_test";
  std::filesystem::create_directories(dir);
  Result<std::string> path = InstallCuFilePolicy(CuFilePolicy{}, dir);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  EXPECT_EQ(*path, dir + "/strata-cufile.json");
  const char* env = getenv(kCuFileConfigEnv);
  ASSERT_NE(env, nullptr);
  EXPECT_EQ(std::string(env), *path);
  struct stat st {};
  ASSERT_EQ(stat(path->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(*path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), CuFilePolicyJson(CuFilePolicy{}));
  // Installing again replaces the file.
  CuFilePolicy compat;
  compat.compat = CompatMode::kAllowedForTests;
  ASSERT_TRUE(InstallCuFilePolicy(compat, dir).ok());
  std::filesystem::remove_all(dir);
}

TEST(CuFileLibraryTest, AbsentLibraryIsUnavailableNamingIt) {
  Result<std::shared_ptr<CuFileLibrary>> lib = CuFileLibrary::Load("libcufile-absent.so.0");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(lib.status().message().rfind("libcufile-absent.so.0 not found", 0), 0u)
      << lib.status().message();
}

TEST(GdsHostFactsTest, ProbeWithoutTheLibraryRecordsWhy) {
  const std::string dir = ::testing::TempDir() + "/gds_host_facts_test";
  PosixFileSystem fs;
  GdsProbeInputs inputs;
  inputs.library = "libcufile-absent.so.0";
  inputs.record_dir = dir;
  GdsProbeResult r = ProbeGdsHost(fs, inputs);
  EXPECT_EQ(r.library, nullptr);
  EXPECT_EQ(r.facts.library_error.rfind("libcufile-absent.so.0 not found", 0), 0u)
      << r.facts.library_error;
  EXPECT_FALSE(r.facts.properties.has_value());
  EXPECT_FALSE(r.facts.filesystem.empty());
  std::filesystem::remove_all(dir);
}

TEST(GdsHostFactsTest, PeerDmaFromIommuGroupsAndCommandLine) {
  const std::string root = ::testing::TempDir() + "/gds_sys";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root + "/kernel/iommu_groups");
  const std::string cmdline = root + "/cmdline";
  std::ofstream(cmdline) << "BOOT_IMAGE=/vmlinuz quiet\n";
  // No groups: the IOMMU is off.
  EXPECT_EQ(ReadPeerDma(root, cmdline), PeerDma::kAcsUnverified);
  std::filesystem::create_directories(root + "/kernel/iommu_groups/0");
  EXPECT_EQ(ReadPeerDma(root, cmdline), PeerDma::kIommuTranslating);
  std::ofstream(cmdline) << "BOOT_IMAGE=/vmlinuz iommu=pt quiet\n";
  EXPECT_EQ(ReadPeerDma(root, cmdline), PeerDma::kAcsUnverified);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace strata
