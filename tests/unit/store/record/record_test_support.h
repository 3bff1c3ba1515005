// Helpers for tests of record files, directories and the disk thread: a
// scratch directory on a filesystem with O_DIRECT, records filled with
// bytes derived from (key, page, rank, plane), and a synchronous way to run
// one disk job with a bounded wait.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "store/base/aligned_buffer.h"
#include "store/disk/disk_thread.h"
#include "store/io/file_system.h"
#include "store/io/uring_block_io.h"
#include "store/record/fingerprint.h"
#include "store/record/record_dir.h"
#include "store/record/record_file.h"
#include "store/record/record_header.h"

namespace strata::testing {

// Scratch directories go under $STRATA_TEST_DIR, else /var/tmp (ext4 on the
// development machine; /tmp may be tmpfs, which refuses O_DIRECT).
class ScratchDir {
 public:
  ScratchDir() {
    const char* base = std::getenv("STRATA_TEST_DIR");
    std::string pattern = std::string(base != nullptr ? base : "/var/tmp") + "/strata-test-XXXXXX";
    std::vector<char> text(pattern.begin(), pattern.end());
    text.push_back('\0');
    const char* made = ::mkdtemp(text.data());
    EXPECT_NE(made, nullptr) << "mkdtemp " << pattern;
    path_ = made != nullptr ? made : "";
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Skips the test, with the reason, when `dir_fd`'s filesystem refuses O_DIRECT.
#define STRATA_SKIP_WITHOUT_DIRECT_IO(fs, dir_fd, path)                                       \
  do {                                                                                        \
    ::strata::Status strata_probe_ = ::strata::ProbeDirectIo((fs), (dir_fd), (path));         \
    if (!strata_probe_.ok()) GTEST_SKIP() << "no O_DIRECT here: " << strata_probe_.message(); \
  } while (0)

// Forwards every call to PosixFileSystem; tests override what they change.
class ForwardingFileSystem : public FileSystem {
 public:
  Result<int> OpenDirectory(const std::string& path, DirectoryMissing missing) override {
    return real_.OpenDirectory(path, missing);
  }
  Result<int> OpenAt(int dir_fd, std::string_view name, OpenFor how) override {
    return real_.OpenAt(dir_fd, name, how);
  }
  void Close(int fd) override { real_.Close(fd); }
  Status Allocate(int fd, uint64_t bytes) override { return real_.Allocate(fd, bytes); }
  Status Truncate(int fd, uint64_t bytes) override { return real_.Truncate(fd, bytes); }
  Result<FileInfo> Stat(int fd) override { return real_.Stat(fd); }
  Result<FileInfo> StatAt(int dir_fd, std::string_view name) override {
    return real_.StatAt(dir_fd, name);
  }
  Result<uint64_t> ReadAt(int fd, std::span<std::byte> out, uint64_t offset) override {
    return real_.ReadAt(fd, out, offset);
  }
  Status WriteAt(int fd, std::span<const std::byte> bytes, uint64_t offset) override {
    return real_.WriteAt(fd, bytes, offset);
  }
  Status Rename(int dir_fd, std::string_view from, std::string_view to) override {
    return real_.Rename(dir_fd, from, to);
  }
  Status Unlink(int dir_fd, std::string_view name) override { return real_.Unlink(dir_fd, name); }
  Status RemoveDirectory(int dir_fd, std::string_view name) override {
    return real_.RemoveDirectory(dir_fd, name);
  }
  Status SyncData(int fd) override { return real_.SyncData(fd); }
  Status Sync(int fd) override { return real_.Sync(fd); }
  Status SyncFilesystem(int fd) override { return real_.SyncFilesystem(fd); }
  Result<std::vector<std::string>> List(int dir_fd) override { return real_.List(dir_fd); }
  Status LockExclusive(int fd) override { return real_.LockExclusive(fd); }
  std::string FilesystemName(int fd) override { return real_.FilesystemName(fd); }
  Result<uint64_t> FreeBytes(int fd) override { return real_.FreeBytes(fd); }

 private:
  PosixFileSystem real_;
};

inline CacheGeometry MakeGeometry(uint32_t page_tokens, std::vector<uint64_t> planes,
                                  uint64_t row_bytes, uint32_t ranks = 1) {
  CacheGeometry g;
  g.page_tokens = page_tokens;
  for (uint32_t r = 0; r < ranks; ++r) {
    RankGeometry rank;
    rank.row = {"row", row_bytes};
    for (size_t p = 0; p < planes.size(); ++p) {
      rank.page_planes.push_back({"plane" + std::to_string(p), planes[p]});
    }
    rank.page_count = 64;
    rank.row_count = 4;
    g.ranks.push_back(rank);
  }
  return g;
}

inline PrefixKey KeyOf(uint64_t consumed, uint8_t salt = 0) {
  PrefixKey k;
  k.consumed = consumed;
  for (size_t i = 0; i < k.digest.size(); ++i) {
    k.digest[i] = static_cast<uint8_t>(consumed * 31 + i * 7 + salt);
  }
  return k;
}

// A record's header plus its payload in caller-owned aligned memory: one
// buffer per stored page record and the row split into `row_piece_bytes`
// pieces (like a row spanning several slab slots).
struct TestRecord {
  RecordHeader header;
  RecordExtents extents;
  std::vector<AlignedBuffer> page_buffers;
  std::vector<AlignedBuffer> row_buffers;

  std::vector<IoPiece> pages() const {
    std::vector<IoPiece> out;
    for (const AlignedBuffer& b : page_buffers) out.push_back({b.data(), b.size()});
    return out;
  }
  std::vector<IoPiece> row() const {
    std::vector<IoPiece> out;
    for (const AlignedBuffer& b : row_buffers) out.push_back({b.data(), b.size()});
    return out;
  }
};

inline const NamespaceIdentity& TestIdentity() {
  static const NamespaceIdentity id = ComputeNamespaceIdentity("test/model", StateMode::kOrdinary);
  return id;
}

// Fills byte i of a buffer with a pattern of (seed, i).
inline void Fill(AlignedBuffer& b, uint64_t seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (uint64_t i = 0; i < b.size(); ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b.data()[i] = static_cast<std::byte>(x);
  }
}

inline TestRecord MakeRecord(const CacheGeometry& geometry, PrefixKey key,
                             std::optional<PrefixKey> parent, uint32_t tail_pages,
                             uint64_t row_piece_bytes = 8192, bool replicated = false) {
  TestRecord r;
  r.header.pages_replicated = replicated;
  r.header.row_replicated = replicated;
  r.header.identity = TestIdentity();
  r.header.fingerprint = ComputeLayoutFingerprint(geometry);
  r.header.key = key;
  r.header.parent = parent;
  r.header.bucket = key.digest;
  r.header.tail_page_count = tail_pages;
  r.header.shape = ShapeOf(geometry);
  r.header.created_unix_ns = 1'700'000'000'000'000'000ULL + key.consumed;
  r.extents = *ComputeExtents(r.header);
  for (uint32_t p = 0; p < tail_pages; ++p) {
    r.page_buffers.emplace_back(r.extents.page_record_bytes);
    Fill(r.page_buffers.back(), key.consumed * 1000 + p);
  }
  for (uint64_t done = 0; done < r.extents.row_segment_bytes; done += row_piece_bytes) {
    r.row_buffers.emplace_back(std::min(row_piece_bytes, r.extents.row_segment_bytes - done));
    Fill(r.row_buffers.back(), key.consumed * 1000 + 999 + done);
  }
  return r;
}

inline constexpr std::chrono::milliseconds kJobWait{30'000};

// Submits one job and waits (bounded) for its completion.
inline DiskCompletion RunJob(DiskThread& thread, DiskJob job) {
  const JobId id = job.id;
  Status submitted = thread.Submit(std::move(job));
  if (!submitted.ok()) return {id, submitted, 0, std::nullopt, std::nullopt};
  std::vector<DiskCompletion> out;
  while (out.empty()) {
    if (!thread.WaitForCompletion(kJobWait)) {
      return {id, Status::Internal("no completion within 30 s"), 0, std::nullopt, std::nullopt};
    }
    thread.Poll(out);
  }
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, id);
  return out[0];
}

inline DiskCompletion WriteRecord(DiskThread& thread, const TestRecord& r, bool with_row = true,
                                  Durability durability = Durability::kNone) {
  static uint64_t next_id = 1;
  return RunJob(thread, {JobId(next_id++),
                         WriteRecordJob{r.header, r.pages(),
                                        with_row ? r.row() : std::vector<IoPiece>{}, durability}});
}

// A record directory with its lock and a disk thread over io_uring.
struct DiskFixture {
  PosixFileSystem fs;
  ScratchDir scratch;
  std::string dir_path;
  std::unique_ptr<RecordDir> dir;
  std::unique_ptr<DiskThread> thread;
  Status status;  // why setup failed, if it did

  explicit DiskFixture(const CacheGeometry& geometry, DiskThreadOptions options = {}) {
    dir_path = RecordDirPath(scratch.path(), TestIdentity(), ComputeLayoutFingerprint(geometry));
    Result<std::unique_ptr<RecordDir>> d = RecordDir::Open(fs, dir_path, RecordDir::Create::kYes);
    if (!d.ok()) {
      status = d.status();
      return;
    }
    dir = std::move(*d);
    status = ProbeDirectIo(fs, dir->fd(), dir_path);
    if (!status.ok()) return;
    Result<std::unique_ptr<BlockIo>> io = OpenUringBlockIo(options.max_inflight_requests);
    if (!io.ok()) {
      status = io.status();
      return;
    }
    Result<std::unique_ptr<DiskThread>> t =
        DiskThread::Start(fs, std::move(*io), dir->fd(), dir_path, options);
    if (!t.ok()) {
      status = t.status();
      return;
    }
    thread = std::move(*t);
  }
};

#define STRATA_DISK_FIXTURE_OR_SKIP(fixture)                                    \
  do {                                                                          \
    if (!(fixture).status.ok()) {                                               \
      if ((fixture).status.code() == ::strata::StatusCode::kFailedPrecondition) \
        GTEST_SKIP() << "no O_DIRECT here: " << (fixture).status.message();     \
      FAIL() << (fixture).status.ToString();                                    \
    }                                                                           \
  } while (0)

}  // namespace strata::testing
