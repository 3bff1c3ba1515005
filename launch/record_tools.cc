#include "launch/record_tools.h"

#include <algorithm>

#include "store/base/aligned_buffer.h"
#include "store/disk/disk_thread.h"
#include "store/io/uring_block_io.h"
#include "store/record/record_dir.h"

namespace strata {

namespace {

constexpr std::chrono::milliseconds kVerifyWait{60'000};  // one record's read, at most
constexpr uint32_t kFsckInflightRequests = 16;

std::string BaseName(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

// Reads one record back whole and verifies it; returns the failure, if any.
Status VerifyRecord(DiskThread& thread, const ScannedRecord& r, AlignedBuffer& buffer,
                    uint64_t job) {
  const RecordExtents& e = r.extents;
  const uint64_t row_bytes = r.row_present ? e.row_segment_bytes : 0;
  const uint64_t need = uint64_t{r.tail_page_count} * e.page_record_bytes + row_bytes;
  if (buffer.size() < need) buffer = AlignedBuffer(need);
  ReadRecordJob read{r.header, 0, {}, {}};
  std::byte* at = buffer.data();
  for (uint32_t p = 0; p < r.tail_page_count; ++p, at += e.page_record_bytes) {
    read.pages.push_back({at, e.page_record_bytes});
  }
  if (row_bytes > 0) read.row.push_back({at, row_bytes});
  STRATA_RETURN_IF_ERROR(thread.Submit({JobId(job), std::move(read)}));
  std::vector<DiskCompletion> done;
  while (done.empty()) {
    if (!thread.WaitForCompletion(kVerifyWait)) {
      return Status::Unavailable("no answer from the disk thread within 60 s");
    }
    thread.Poll(done);
  }
  return done[0].status;
}

Status FsckDir(FileSystem& fs, const std::string& path, const FsckOptions& options,
               FsckReport& report) {
  STRATA_ASSIGN_OR_RETURN(RecordExpectation expect, ExpectationFromDirName(BaseName(path)));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RecordDir> dir,
                          RecordDir::Open(fs, path, RecordDir::Create::kNo));
  // The orphan rule runs once, on what survives checksum verification.
  STRATA_ASSIGN_OR_RETURN(ScanReport scan, dir->Scan(expect, OrphanRule::kDefer));
  std::vector<RejectedFile> rejected = std::move(scan.rejected);
  std::vector<ScannedRecord> candidates = std::move(scan.records);

  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<BlockIo> io, OpenUringBlockIo(kFsckInflightRequests));
  DiskThreadOptions thread_options;
  thread_options.max_inflight_requests = kFsckInflightRequests;
  thread_options.max_active_jobs = 1;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DiskThread> thread,
                          DiskThread::Start(fs, std::move(io), dir->fd(), path, thread_options));
  AlignedBuffer buffer;
  std::vector<ScannedRecord> verified;
  FsckProgress progress{path, 0, candidates.size(), 0};
  for (ScannedRecord& r : candidates) {
    Status s = VerifyRecord(*thread, r, buffer, progress.records_done + 1);
    if (s.code() == StatusCode::kUnavailable) return s;
    ++progress.records_done;
    progress.bytes_done += r.file_bytes;
    if (s.ok()) {
      verified.push_back(std::move(r));
    } else {
      const bool header = s.code() != StatusCode::kCorruption;
      rejected.push_back({RecordFileName(r.key),
                          header ? RejectReason::kUnreadable : RejectReason::kBadChecksum,
                          s.message()});
    }
    if (options.progress) options.progress(progress);
  }
  STRATA_RETURN_IF_ERROR(thread->Shutdown(DiskThread::kDefaultShutdownDeadline));
  RemoveOrphans(verified, rejected);

  for (const ScannedRecord& r : verified) {
    if (r.row_state == RowState::kPartial) ++report.torn_rows;
    ++report.records_ok;
    report.bytes_verified += r.file_bytes;
  }
  if (options.repair) {
    ScanReport to_remove;
    to_remove.rejected = rejected;
    for (const ScannedRecord& r : verified) {
      if (r.row_state == RowState::kPartial) to_remove.records.push_back(r);
    }
    RecordDir::Cleanup c = dir->RemoveRejected(to_remove);
    report.removed += c.removed;
    report.truncated += c.truncated;
    STRATA_RETURN_IF_ERROR(c.first_error);
  }
  for (RejectedFile& r : rejected) {
    const bool removable = r.reason != RejectReason::kNotAFile;
    report.problems.push_back(
        {path, std::move(r.name), r.reason, std::move(r.detail), options.repair && removable});
  }
  ++report.directories;
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> FindNamespaceDirs(FileSystem& fs, const std::string& path) {
  if (ExpectationFromDirName(BaseName(path)).ok()) return std::vector<std::string>{path};
  STRATA_ASSIGN_OR_RETURN(int fd, fs.OpenDirectory(path, false));
  Result<std::vector<std::string>> names = fs.List(fd);
  std::vector<std::string> dirs;
  if (names.ok()) {
    for (const std::string& n : *names) {
      Result<FileInfo> info = fs.StatAt(fd, n);
      if (info.ok() && info->is_directory && ExpectationFromDirName(n).ok()) {
        dirs.push_back(Join(path, n));
      }
    }
  }
  fs.Close(fd);
  if (!names.ok()) return names.status();
  if (dirs.empty()) {
    return Status::NotFound("no record directory (<16 hex>-<32 hex>) at or under '" + path + "'");
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

Result<FsckReport> RunFsck(FileSystem& fs, const std::string& path, const FsckOptions& options) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> dirs, FindNamespaceDirs(fs, path));
  FsckReport report;
  for (const std::string& dir : dirs) STRATA_RETURN_IF_ERROR(FsckDir(fs, dir, options, report));
  return report;
}

Result<std::vector<InspectedDir>> RunInspect(FileSystem& fs, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> dirs, FindNamespaceDirs(fs, path));
  std::vector<InspectedDir> out;
  for (const std::string& dir : dirs) {
    STRATA_ASSIGN_OR_RETURN(RecordExpectation expect, ExpectationFromDirName(BaseName(dir)));
    STRATA_ASSIGN_OR_RETURN(int fd, fs.OpenDirectory(dir, false));
    Result<ScanReport> scan = ScanRecordDirectory(fs, fd, expect);
    fs.Close(fd);
    if (!scan.ok()) return scan.status().WithContext(dir);
    out.push_back({dir, std::move(*scan)});
  }
  return out;
}

}  // namespace strata
