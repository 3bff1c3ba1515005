#include "launch/config/disk_space.h"

#include <gtest/gtest.h>

#include <sys/statvfs.h>
#include <unistd.h>
#include <algorithm>

#include <filesystem>
#include <fstream>
#include <string>

namespace strata {
namespace {

TEST(DiskSpaceTest, ExistingDirectory) {
  Result<uint64_t> free = FilesystemFreeBytes(::testing::TempDir());
  ASSERT_TRUE(free.ok()) << free.status().ToString();
  struct statvfs fs {};
  ASSERT_EQ(statvfs(::testing::TempDir().c_str(), &fs), 0);
  // Other processes write meanwhile; the two readings agree within 1 GiB.
  const uint64_t direct = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  EXPECT_LT(*free > direct ? *free - direct : direct - *free, 1ULL << 30);
}

TEST(DiskSpaceTest, MissingDirectoryUsesItsNearestAncestor) {
  Result<uint64_t> free = FilesystemFreeBytes(::testing::TempDir() + "/strata-not-there/a/b/c");
  ASSERT_TRUE(free.ok()) << free.status().ToString();
  EXPECT_GT(*free, 0u);
}

TEST(DiskSpaceTest, RelativePathsResolve) {
  EXPECT_TRUE(FilesystemFreeBytes("not-yet-created-dir").ok());
}

TEST(DiskSpaceTest, DirectoryDiskBytesCountsAllocatedBlocksOfFilesBelow) {
  const std::string dir = ::testing::TempDir() + "/strata-disk-bytes";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/ns");
  EXPECT_EQ(DirectoryDiskBytes(dir), 0u);
  std::ofstream(dir + "/ns/a.ckpt") << std::string(64 * 1024, 'x');
  EXPECT_GE(DirectoryDiskBytes(dir), 64u * 1024);
  EXPECT_EQ(DirectoryDiskBytes(dir + "/missing"), 0u);
  std::filesystem::remove_all(dir);
}

TEST(DiskSpaceTest, ALimitAboveWhatTheFilesystemHoldsIsLowered) {
  // A directory of its own: what it holds does not change under the test.
  const std::string dir = ::testing::TempDir() + "strata-disk-space-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/a.ckpt") << std::string(64 * 1024, 'x');
  const uint64_t held = DirectoryDiskBytes(dir);
  // Other processes may write to the same filesystem meanwhile: the free
  // bytes the call saw lie between the readings before and after it.
  Result<uint64_t> free_before = FilesystemFreeBytes(dir);
  ASSERT_TRUE(free_before.ok());
  const uint64_t huge = uint64_t{1} << 62;  // more than any filesystem here
  Result<uint64_t> lowered = LimitForRecordDirectory(dir, huge);
  Result<uint64_t> free_after = FilesystemFreeBytes(dir);
  ASSERT_TRUE(free_after.ok());
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  EXPECT_LT(*lowered, huge);
  // What it has free plus what the directory holds, less a sixteenth.
  auto limit_for = [held](uint64_t free) { return (free + held) - (free + held) / 16; };
  const uint64_t slack = uint64_t{1} << 20;  // blocks allocated around the readings
  EXPECT_GE(*lowered + slack, limit_for(std::min(*free_before, *free_after)));
  EXPECT_LE(*lowered, limit_for(std::max(*free_before, *free_after)) + slack);
  Result<uint64_t> kept = LimitForRecordDirectory(dir, 4096);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, 4096u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strata
