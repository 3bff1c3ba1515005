// PosixFileSystem's creation rules: files 0600, directories 0700, files only
// ever created new (O_EXCL|O_NOFOLLOW), so a symlink planted at a temporary
// name is refused and its target left untouched.
#include "store/io/file_system.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "store/record/record_file.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::KeyOf;
using testing::ScratchDir;

unsigned ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(FileSystemTest, CreatesDirectoriesOwnerOnly) {
  ScratchDir scratch;
  PosixFileSystem fs;
  const std::string nested = scratch.path() + "/base/ns";
  Result<int> fd = fs.OpenDirectory(nested, DirectoryMissing::kCreate);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  fs.Close(*fd);
  EXPECT_EQ(ModeOf(scratch.path() + "/base"), 0700u);
  EXPECT_EQ(ModeOf(nested), 0700u);
}

TEST(FileSystemTest, CreatesFilesOwnerOnly) {
  ScratchDir scratch;
  PosixFileSystem fs;
  Result<int> dir = fs.OpenDirectory(scratch.path(), DirectoryMissing::kFail);
  ASSERT_TRUE(dir.ok());
  Result<int> fd = fs.OpenAt(*dir, "plain", OpenFor::kWriteNew);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  fs.Close(*fd);
  EXPECT_EQ(ModeOf(scratch.path() + "/plain"), 0600u);
  fs.Close(*dir);
}

TEST(FileSystemTest, NewFileRefusesAnExistingName) {
  ScratchDir scratch;
  PosixFileSystem fs;
  Result<int> dir = fs.OpenDirectory(scratch.path(), DirectoryMissing::kFail);
  ASSERT_TRUE(dir.ok());
  { std::ofstream(scratch.path() + "/taken") << "keep"; }
  Result<int> fd = fs.OpenAt(*dir, "taken", OpenFor::kWriteNew);
  EXPECT_EQ(fd.status().code(), StatusCode::kAlreadyExists) << fd.status().ToString();
  EXPECT_EQ(ReadText(scratch.path() + "/taken"), "keep");  // not truncated
  fs.Close(*dir);
}

TEST(FileSystemTest, SymlinkAtATemporaryNameIsRefused) {
  ScratchDir scratch;
  PosixFileSystem fs;
  Result<int> dir = fs.OpenDirectory(scratch.path(), DirectoryMissing::kFail);
  ASSERT_TRUE(dir.ok());
  const std::string target = scratch.path() + "/victim";
  { std::ofstream(target) << "precious"; }
  const std::string temp = TemporaryFileName(KeyOf(64));
  ASSERT_EQ(::symlink(target.c_str(), (scratch.path() + "/" + temp).c_str()), 0);
  for (OpenFor how : {OpenFor::kWriteNew, OpenFor::kDirectWriteNew}) {
    Result<int> fd = fs.OpenAt(*dir, temp, how);
    EXPECT_FALSE(fd.ok()) << "opened through a symlink";
    if (fd.ok()) fs.Close(*fd);
  }
  EXPECT_EQ(ReadText(target), "precious");
  fs.Close(*dir);
}

// A record write whose temporary name is taken (an abandoned write, or a
// planted symlink) replaces the name and never writes through it.
TEST(FileSystemTest, RecordWriteReplacesAStaleTemporaryWithoutFollowingIt) {
  ScratchDir scratch;
  PosixFileSystem fs;
  Result<int> dir = fs.OpenDirectory(scratch.path(), DirectoryMissing::kFail);
  ASSERT_TRUE(dir.ok());
  STRATA_SKIP_WITHOUT_DIRECT_IO(fs, *dir, scratch.path());
  const std::string target = scratch.path() + "/victim";
  { std::ofstream(target) << "precious"; }
  const PrefixKey k = KeyOf(64);
  const std::string temp_path = scratch.path() + "/" + TemporaryFileName(k);
  ASSERT_EQ(::symlink(target.c_str(), temp_path.c_str()), 0);
  Result<int> fd = BeginRecordWrite(fs, *dir, k, 8192);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  fs.Close(*fd);
  EXPECT_FALSE(std::filesystem::is_symlink(temp_path));
  EXPECT_EQ(ModeOf(temp_path), 0600u);
  EXPECT_EQ(ReadText(target), "precious");
  EXPECT_EQ(std::filesystem::file_size(target), 8u);
  fs.Close(*dir);
}

}  // namespace
}  // namespace strata
