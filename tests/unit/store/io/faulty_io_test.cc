// The fault decorators over the real filesystem and io_uring: what they
// inject, that everything else passes through unchanged, and what they count.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "store/base/aligned_buffer.h"
#include "store/io/faulty_block_io.h"
#include "store/io/faulty_file_system.h"
#include "store/io/uring_block_io.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::ScratchDir;

constexpr std::chrono::seconds kReapBound{10};

TEST(FaultyFileSystemTest, FailsTheNthCallOfItsKindOnly) {
  ScratchDir dir;
  PosixFileSystem posix;
  FaultCounters counters;
  FaultyFileSystem fs(posix, FaultPlan::Nth(FaultOp::kRename, 2, FaultEffect::kError, ENOSPC),
                      counters);
  Result<int> d = fs.OpenDirectory(dir.path(), DirectoryMissing::kFail);
  ASSERT_TRUE(d.ok());
  for (const char* name : {"a", "b", "c"}) {
    Result<int> f = fs.OpenAt(*d, name, OpenFor::kWriteNew);
    ASSERT_TRUE(f.ok());
    fs.Close(*f);
  }
  EXPECT_TRUE(fs.Rename(*d, "a", "a2").ok());
  const Status second = fs.Rename(*d, "b", "b2");
  EXPECT_EQ(second.code(), StatusCode::kFsFull) << second.ToString();
  EXPECT_NE(second.message().find("injected"), std::string::npos);
  EXPECT_TRUE(fs.Rename(*d, "c", "c2").ok());
  EXPECT_TRUE(fs.StatAt(*d, "b").ok());  // the failed rename changed nothing
  EXPECT_EQ(counters.seen(FaultOp::kRename), 3u);
  EXPECT_EQ(counters.fired(FaultOp::kRename), 1u);
  EXPECT_EQ(counters.seen(FaultOp::kOpen), 4u);
  EXPECT_EQ(counters.fired_total(), 1u);
  fs.Close(*d);
}

TEST(FaultyFileSystemTest, ShortReadReturnsHalfAndShortWriteTearsTheFile) {
  ScratchDir dir;
  PosixFileSystem posix;
  FaultCounters counters;
  FaultyFileSystem fs(
      posix,
      FaultPlan({FaultRule{.op = FaultOp::kWriteAt, .nth = 2, .effect = FaultEffect::kShort},
                 FaultRule{.op = FaultOp::kReadAt, .nth = 1, .effect = FaultEffect::kShort}},
                0),
      counters);
  Result<int> d = fs.OpenDirectory(dir.path(), DirectoryMissing::kFail);
  ASSERT_TRUE(d.ok());
  Result<int> f = fs.OpenAt(*d, "file", OpenFor::kReadWrite);
  EXPECT_FALSE(f.ok());  // kReadWrite does not create
  f = fs.OpenAt(*d, "file", OpenFor::kWriteNew);
  ASSERT_TRUE(f.ok());
  std::vector<std::byte> bytes(1000, std::byte{7});
  EXPECT_TRUE(fs.WriteAt(*f, bytes, 0).ok());
  EXPECT_FALSE(fs.WriteAt(*f, bytes, 1000).ok());
  fs.Close(*f);
  Result<FileInfo> info = fs.StatAt(*d, "file");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->bytes, 1500u);  // the torn second write
  f = fs.OpenAt(*d, "file", OpenFor::kRead);
  ASSERT_TRUE(f.ok());
  std::vector<std::byte> out(1000);
  EXPECT_EQ(*fs.ReadAt(*f, out, 0), 500u);
  EXPECT_EQ(*fs.ReadAt(*f, out, 0), 1000u);
  fs.Close(*f);
  EXPECT_EQ(counters.fired(FaultOp::kWriteAt), 1u);
  EXPECT_EQ(counters.fired(FaultOp::kReadAt), 1u);
  fs.Close(*d);
}

// Reaps until `count` completions arrived or the bound passed.
std::vector<BlockCompletion> ReapAll(BlockIo& io, size_t count) {
  std::vector<BlockCompletion> all;
  const auto deadline = std::chrono::steady_clock::now() + kReapBound;
  while (all.size() < count && std::chrono::steady_clock::now() < deadline) {
    std::vector<BlockCompletion> out(count);
    Result<size_t> n = io.Reap(out, std::chrono::milliseconds(100));
    if (!n.ok()) break;
    all.insert(all.end(), out.begin(), out.begin() + static_cast<std::ptrdiff_t>(*n));
  }
  return all;
}

TEST(FaultyBlockIoTest, InjectsErrorsAndShortTransfersAndPassesTheRest) {
  ScratchDir dir;
  PosixFileSystem fs;
  Result<int> d = fs.OpenDirectory(dir.path(), DirectoryMissing::kFail);
  ASSERT_TRUE(d.ok());
  Result<int> f = fs.OpenAt(*d, "data", OpenFor::kWriteNew);
  ASSERT_TRUE(f.ok());
  Result<std::unique_ptr<BlockIo>> uring = OpenUringBlockIo(8);
  ASSERT_TRUE(uring.ok()) << uring.status().ToString();
  FaultCounters counters;
  FaultyBlockIo io(
      std::move(*uring),
      FaultPlan({FaultRule{.op = FaultOp::kBlockWrite, .nth = 1, .error = EIO},
                 FaultRule{.op = FaultOp::kBlockWrite, .nth = 2, .effect = FaultEffect::kShort},
                 FaultRule{.op = FaultOp::kBlockSync, .nth = 1, .error = EINTR}},
                0),
      counters);
  AlignedBuffer buf(16384);
  std::memset(buf.data(), 3, buf.size());
  const iovec iov{buf.data(), buf.size()};
  const std::vector<BlockRequest> requests = {
      {.tag = 1, .op = BlockOp::kWrite, .fd = *f, .offset = 0, .iov = &iov, .iov_count = 1},
      {.tag = 2, .op = BlockOp::kWrite, .fd = *f, .offset = 0, .iov = &iov, .iov_count = 1},
      {.tag = 3, .op = BlockOp::kWrite, .fd = *f, .offset = 16384, .iov = &iov, .iov_count = 1},
      {.tag = 4, .op = BlockOp::kSyncData, .fd = *f},
  };
  ASSERT_TRUE(io.Submit(requests).ok());
  std::vector<BlockCompletion> done = ReapAll(io, requests.size());
  ASSERT_EQ(done.size(), requests.size());
  std::map<uint64_t, int64_t> result;
  for (const BlockCompletion& c : done) result[c.tag] = c.result;
  EXPECT_EQ(result[1], -EIO);
  EXPECT_EQ(result[2], 8192);  // half, 4 KiB-aligned
  EXPECT_EQ(result[3], 16384);
  EXPECT_EQ(result[4], -EINTR);
  EXPECT_EQ(counters.seen(FaultOp::kBlockWrite), 3u);
  EXPECT_EQ(counters.fired(FaultOp::kBlockWrite), 2u);
  EXPECT_EQ(counters.fired(FaultOp::kBlockSync), 1u);
  // The shortened write still reached the file; the failed one did not run.
  Result<FileInfo> info = fs.Stat(*f);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->bytes, 32768u);
  fs.Close(*f);
  fs.Close(*d);
}

}  // namespace
}  // namespace strata
