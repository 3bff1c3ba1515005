#include "store/record/record_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "store/record/checksum.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::DiskFixture;
using testing::KeyOf;
using testing::MakeGeometry;
using testing::MakeRecord;
using testing::TestRecord;
using testing::WriteRecord;

const CacheGeometry& Geometry() {
  static const CacheGeometry g = MakeGeometry(64, {4096, 100}, 9000);
  return g;
}

class RecordDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    f_ = std::make_unique<DiskFixture>(Geometry());
    STRATA_DISK_FIXTURE_OR_SKIP(*f_);
    expect_ =
        ExpectationFor(testing::TestIdentity(), ComputeLayoutFingerprint(Geometry()), Geometry());
  }

  // Writes a record of `tail` pages at `consumed` with the given parent.
  RecordHeader Put(uint64_t consumed, std::optional<uint64_t> parent, uint32_t tail = 2,
                   bool with_row = true) {
    TestRecord r = MakeRecord(Geometry(), KeyOf(consumed),
                              parent ? std::optional(KeyOf(*parent)) : std::nullopt, tail);
    DiskCompletion c = WriteRecord(*f_->thread, r, with_row);
    EXPECT_TRUE(c.status.ok()) << c.status.ToString();
    return c.header.value_or(r.header);
  }

  std::string Path(const PrefixKey& key) const { return f_->dir_path + "/" + RecordFileName(key); }

  ScanReport Scan() {
    Result<ScanReport> report = f_->dir->Scan(expect_);
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    return report.ok() ? std::move(*report) : ScanReport{};
  }

  // The one rejection of a scan that must reject exactly one file.
  RejectedFile OnlyRejection() {
    ScanReport r = Scan();
    EXPECT_EQ(r.rejected.size(), 1u);
    return r.rejected.empty() ? RejectedFile{} : r.rejected[0];
  }

  // Rewrites the first 4 KiB of a file through `edit`, then reseals the
  // header checksum when `reseal` is set.
  void PatchHeader(const PrefixKey& key, const std::function<void(std::vector<std::byte>&)>& edit,
                   bool reseal) {
    PosixFileSystem fs;
    Result<int> fd = fs.OpenAt(f_->dir->fd(), RecordFileName(key), OpenFor::kReadWrite);
    ASSERT_TRUE(fd.ok());
    std::vector<std::byte> bytes(kRecordHeaderBytes);
    ASSERT_EQ(*fs.ReadAt(*fd, bytes, 0), kRecordHeaderBytes);
    edit(bytes);
    if (reseal) {
      uint64_t sum = Xxh3(std::span(bytes).first(kHeaderChecksumOffset));
      for (int i = 0; i < 8; ++i)
        bytes[kHeaderChecksumOffset + i] = static_cast<std::byte>(sum >> (8 * i));
    }
    ASSERT_TRUE(fs.WriteAt(*fd, bytes, 0).ok());
    fs.Close(*fd);
  }
  void RewriteHeader(const RecordHeader& h) {
    PatchHeader(
        h.key, [&](std::vector<std::byte>& b) { ASSERT_TRUE(EncodeRecordHeader(h, b).ok()); },
        false);
  }

  std::unique_ptr<DiskFixture> f_;
  RecordExpectation expect_;
};

TEST_F(RecordDirTest, ScanRejectsBadMagic) {
  RecordHeader h = Put(128, {});
  PatchHeader(
      h.key, [](std::vector<std::byte>& b) { b[3] = std::byte{'?'}; }, false);
  RejectedFile r = OnlyRejection();
  EXPECT_EQ(r.reason, RejectReason::kBadHeader);
  EXPECT_NE(r.detail.find("bad magic"), std::string::npos) << r.detail;
}

TEST_F(RecordDirTest, ScanRejectsAnUnknownVersion) {
  RecordHeader h = Put(128, {});
  PatchHeader(
      h.key, [](std::vector<std::byte>& b) { b[kVersionOffset] = std::byte{9}; }, true);
  RejectedFile r = OnlyRejection();
  EXPECT_EQ(r.reason, RejectReason::kBadHeader);
  EXPECT_NE(r.detail.find("unsupported format version 9"), std::string::npos) << r.detail;
}

TEST_F(RecordDirTest, ScanRejectsAWrongIdentity) {
  RecordHeader h = Put(128, {});
  h.identity = ComputeNamespaceIdentity("another/model", StateMode::kOrdinary);
  RewriteHeader(h);
  EXPECT_EQ(OnlyRejection().reason, RejectReason::kWrongIdentity);
}

TEST_F(RecordDirTest, ScanRejectsAWrongFingerprint) {
  RecordHeader h = Put(128, {});
  h.fingerprint[0] ^= 0xff;
  RewriteHeader(h);
  RejectedFile r = OnlyRejection();
  EXPECT_EQ(r.reason, RejectReason::kWrongFingerprint);
  EXPECT_NE(r.detail.find(ToHex(h.fingerprint)), std::string::npos);
}

TEST_F(RecordDirTest, ScanRejectsANameThatIsNotTheKey) {
  RecordHeader h = Put(128, {});
  std::filesystem::rename(Path(h.key), Path(KeyOf(129)));
  RejectedFile r = OnlyRejection();
  EXPECT_EQ(r.reason, RejectReason::kNameMismatch);
  EXPECT_EQ(r.name, RecordFileName(KeyOf(129)));
}

TEST_F(RecordDirTest, ScanRejectsHeaderSizesLargerThanTheFile) {
  RecordHeader h = Put(128, {});
  h.tail_page_count = 40;  // claims far more pages than were written
  RewriteHeader(h);
  RejectedFile r = OnlyRejection();
  EXPECT_EQ(r.reason, RejectReason::kBadSize);
  EXPECT_NE(r.detail.find("page segment"), std::string::npos) << r.detail;
}

TEST_F(RecordDirTest, ScanRejectsAFileTruncatedInsideThePageSegment) {
  RecordHeader h = Put(128, {}, 3);
  RecordExtents e = *ComputeExtents(h);
  std::filesystem::resize_file(Path(h.key), e.page_offset(1) + 4096);
  RejectedFile r = OnlyRejection();
  EXPECT_EQ(r.reason, RejectReason::kBadSize);
  EXPECT_NE(r.detail.find("in page 1 of 3"), std::string::npos) << r.detail;
}

TEST_F(RecordDirTest, ScanRejectsAShortChecksumSegment) {
  RecordHeader h = Put(128, {}, 3);
  std::filesystem::resize_file(Path(h.key), kRecordHeaderBytes + 16);
  RejectedFile r = OnlyRejection();
  EXPECT_EQ(r.reason, RejectReason::kBadSize);
  EXPECT_NE(r.detail.find("checksum segment"), std::string::npos) << r.detail;
}

TEST_F(RecordDirTest, ScanRejectsAFileShorterThanItsHeader) {
  RecordHeader h = Put(128, {});
  std::filesystem::resize_file(Path(h.key), 100);
  EXPECT_EQ(OnlyRejection().reason, RejectReason::kBadHeader);
}

TEST_F(RecordDirTest, ScanDerivesRowPresenceFromTheSize) {
  RecordHeader with = Put(128, {});
  RecordHeader without = Put(192, 128, 1, /*with_row=*/false);
  ScanReport r = Scan();
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_TRUE(r.records[0].row_present);
  EXPECT_FALSE(r.records[1].row_present);
  EXPECT_EQ(r.records[1].file_bytes, ComputeExtents(without)->row_segment_offset);
}

TEST_F(RecordDirTest, TruncationMakesTheRecordPageOnly) {
  RecordHeader h = Put(128, {});
  DiskCompletion t =
      testing::RunJob(*f_->thread, {JobId(77), TruncateRecordJob{h, Durability::kNone}});
  ASSERT_TRUE(t.status.ok()) << t.status.ToString();
  ScanReport r = Scan();
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_FALSE(r.records[0].row_present);
  EXPECT_EQ(r.records[0].row_state, RowState::kAbsent);
  EXPECT_EQ(r.records[0].header, h);  // truncation changes nothing else
}

TEST_F(RecordDirTest, CleanupRemovesTemporaryFiles) {
  Put(128, {});
  PosixFileSystem fs;
  for (const char* name : {"0000000000000080-00000000000000000000000000000000.ckpt.tmp",
                           ".strata-direct-io-probe.tmp"}) {
    Result<int> fd = fs.OpenAt(f_->dir->fd(), name, OpenFor::kWriteNew);
    ASSERT_TRUE(fd.ok());
    fs.Close(*fd);
  }
  ScanReport r = Scan();
  EXPECT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.CountsByReason()[static_cast<size_t>(RejectReason::kTemporary)], 2u);
  RecordDir::Cleanup c = f_->dir->RemoveRejected(r);
  EXPECT_TRUE(c.first_error.ok()) << c.first_error.ToString();
  EXPECT_EQ(c.removed, 2u);
  EXPECT_EQ(*fs.List(f_->dir->fd()), std::vector<std::string>{RecordFileName(KeyOf(128))});
}

TEST_F(RecordDirTest, CleanupRemovesOrphansWithTheirDescendants) {
  Put(64, {});
  Put(128, 64);
  RecordHeader gone = Put(192, 128);
  Put(256, 192);
  Put(320, 256);
  Put(384, 128);
  std::filesystem::remove(Path(gone.key));
  ScanReport r = Scan();
  ASSERT_EQ(r.records.size(), 3u);                                                // 64, 128, 384
  EXPECT_EQ(r.CountsByReason()[static_cast<size_t>(RejectReason::kOrphan)], 2u);  // 256, 320
  RecordDir::Cleanup c = f_->dir->RemoveRejected(r);
  EXPECT_EQ(c.removed, 2u);
  EXPECT_FALSE(std::filesystem::exists(Path(KeyOf(256))));
  EXPECT_FALSE(std::filesystem::exists(Path(KeyOf(320))));
  EXPECT_TRUE(std::filesystem::exists(Path(KeyOf(384))));
  EXPECT_TRUE(Scan().rejected.empty());
}

TEST_F(RecordDirTest, CleanupTruncatesATornRowAndLeavesForeignFiles) {
  RecordHeader h = Put(128, {});
  RecordExtents e = *ComputeExtents(h);
  std::filesystem::resize_file(Path(h.key), e.row_segment_offset + 4096);
  { std::ofstream(f_->dir_path + "/NOTES.txt") << "operator notes"; }
  ScanReport r = Scan();
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].row_state, RowState::kPartial);
  EXPECT_EQ(r.ignored, std::vector<std::string>{"NOTES.txt"});
  RecordDir::Cleanup c = f_->dir->RemoveRejected(r);
  EXPECT_EQ(c.truncated, 1u);
  EXPECT_EQ(std::filesystem::file_size(Path(h.key)), e.row_segment_offset);
  EXPECT_TRUE(std::filesystem::exists(f_->dir_path + "/NOTES.txt"));
}

// What an index node is built from: everything but the file's own bytes.
struct IndexEntry {
  PrefixKey key;
  std::optional<PrefixKey> parent;
  Digest128 bucket;
  uint32_t tail_page_count;
  bool row_present;
  bool pages_replicated;
  bool row_replicated;
  friend bool operator==(const IndexEntry&, const IndexEntry&) = default;
};

TEST_F(RecordDirTest, RebuiltIndexEqualsTheOneThatWroteTheFiles) {
  std::vector<IndexEntry> written;
  auto put = [&](uint64_t consumed, std::optional<uint64_t> parent, uint32_t tail, bool row) {
    RecordHeader h = Put(consumed, parent, tail, row);
    written.push_back(
        {h.key, h.parent, h.bucket, h.tail_page_count, row, h.pages_replicated, h.row_replicated});
  };
  put(64, {}, 1, true);
  put(128, 64, 1, false);
  put(200, 128, 2, true);
  put(256, 128, 0, true);
  put(1024, {}, 16, true);
  Result<ScanReport> r = f_->dir->Scan(expect_);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->rejected.empty());
  std::vector<IndexEntry> rebuilt;
  for (const ScannedRecord& s : r->records) {
    rebuilt.push_back({s.key, s.parent, s.bucket, s.tail_page_count, s.row_present,
                       s.pages_replicated, s.row_replicated});
    struct stat st {};
    ASSERT_EQ(::stat(Path(s.key).c_str(), &st), 0);
    EXPECT_EQ(s.mtime_unix_ns, int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec);
  }
  auto by_key = [](const IndexEntry& a, const IndexEntry& b) { return a.key < b.key; };
  std::sort(written.begin(), written.end(), by_key);
  EXPECT_EQ(rebuilt, written);
}

TEST_F(RecordDirTest, ASecondOwnerInTheSameProcessIsRefused) {
  PosixFileSystem fs;
  Result<std::unique_ptr<RecordDir>> second =
      RecordDir::Open(fs, f_->dir_path, RecordDir::Create::kNo);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kBusy);
  EXPECT_NE(second.status().message().find(f_->dir_path), std::string::npos);
  EXPECT_NE(second.status().message().find("pid " + std::to_string(::getpid())), std::string::npos)
      << second.status().message();
}

TEST_F(RecordDirTest, IndependentNamespacesShareABaseDirectory) {
  PosixFileSystem fs;
  CacheGeometry other = MakeGeometry(64, {8192}, 4096);
  std::string path =
      RecordDirPath(f_->scratch.path(), testing::TestIdentity(), ComputeLayoutFingerprint(other));
  Result<std::unique_ptr<RecordDir>> d = RecordDir::Open(fs, path, RecordDir::Create::kYes);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_NE(path, f_->dir_path);
}

// Runs `body` in a child process and returns its exit code.
int InChild(const std::function<int()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

TEST(RecordDirLockTest, LockContentionBetweenTwoProcesses) {
  testing::ScratchDir scratch;
  const std::string path = scratch.path() + "/ns";
  int to_parent[2], to_child[2];
  ASSERT_EQ(::pipe(to_parent), 0);
  ASSERT_EQ(::pipe(to_child), 0);
  pid_t child = ::fork();
  if (child == 0) {
    // Owner: lock, tell the parent, hold until told to exit.
    PosixFileSystem fs;
    Result<std::unique_ptr<RecordDir>> d = RecordDir::Open(fs, path, RecordDir::Create::kYes);
    char ok = d.ok() ? 'y' : 'n';
    (void)!::write(to_parent[1], &ok, 1);
    char go;
    (void)!::read(to_child[0], &go, 1);
    ::_exit(d.ok() ? 0 : 1);
  }
  char ok = 0;
  ASSERT_EQ(::read(to_parent[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  PosixFileSystem fs;
  Result<std::unique_ptr<RecordDir>> mine = RecordDir::Open(fs, path, RecordDir::Create::kYes);
  ASSERT_FALSE(mine.ok());
  EXPECT_EQ(mine.status().code(), StatusCode::kBusy);
  EXPECT_NE(mine.status().message().find("'" + path + "'"), std::string::npos);
  EXPECT_NE(mine.status().message().find("pid " + std::to_string(child)), std::string::npos)
      << mine.status().message();
  // The lock goes with its owner.
  ASSERT_EQ(::write(to_child[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  mine = RecordDir::Open(fs, path, RecordDir::Create::kNo);
  EXPECT_TRUE(mine.ok()) << mine.status().ToString();
  // And a child cannot take it from us.
  EXPECT_EQ(InChild([&] {
              PosixFileSystem child_fs;
              auto d = RecordDir::Open(child_fs, path, RecordDir::Create::kNo);
              return !d.ok() && d.status().code() == StatusCode::kBusy ? 0 : 1;
            }),
            0);
  for (int fd : {to_parent[0], to_parent[1], to_child[0], to_child[1]}) ::close(fd);
}

TEST(RecordDirLockTest, FindsTheFlockHolderInProcLocks) {
  const std::string locks =
      "1: POSIX  ADVISORY  WRITE 77 08:02:1234 0 EOF\n"
      "2: FLOCK  ADVISORY  WRITE 4242 fd:01:98765 0 EOF\n"
      "2: -> FLOCK  ADVISORY  WRITE 5151 fd:01:98765 0 EOF\n";
  EXPECT_EQ(FindFlockHolder(locks, makedev(0xfd, 0x01), 98765), 4242);
  EXPECT_EQ(FindFlockHolder(locks, makedev(0xfd, 0x01), 1234), std::nullopt);
  EXPECT_EQ(FindFlockHolder(locks, makedev(0x08, 0x02), 1234), std::nullopt);  // POSIX, not FLOCK
  EXPECT_EQ(FindFlockHolder("garbage\n\n", 1, 2), std::nullopt);
}

}  // namespace
}  // namespace strata
