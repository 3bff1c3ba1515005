#include "launch/config/disk_space.h"

#include <gtest/gtest.h>
#include <sys/statvfs.h>

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

}  // namespace
}  // namespace strata
