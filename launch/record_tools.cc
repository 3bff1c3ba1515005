#include "launch/record_tools.h"

#include <algorithm>

#include "store/record/record_dir.h"
#include "store/record/record_verify.h"

namespace strata {

namespace {

std::string BaseName(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

// Reads one record back and verifies it, page by page, in `scratch`.
Status VerifyRecord(FileSystem& fs, int dir_fd, const ScannedRecord& r,
                    std::span<std::byte> scratch) {
  STRATA_ASSIGN_OR_RETURN(int fd, fs.OpenAt(dir_fd, RecordFileName(r.key), OpenFor::kRead));
  Status s = VerifyRecordFile(fs, fd, r.header, r.extents, r.row_present, scratch);
  fs.Close(fd);
  return s;
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

  // Bounded memory: one scratch buffer, whatever sizes the headers claim.
  std::vector<std::byte> scratch(kVerifyScratchBytes);
  std::vector<ScannedRecord> verified;
  FsckProgress progress{path, 0, candidates.size(), 0};
  for (ScannedRecord& r : candidates) {
    Status s = VerifyRecord(fs, dir->fd(), r, scratch);
    ++progress.records_done;
    progress.bytes_done += r.file_bytes;
    if (s.ok()) {
      verified.push_back(std::move(r));
    } else {
      // Only a checksum or size proven wrong is corruption; a read error is not.
      const bool corrupt = s.code() == StatusCode::kCorruption;
      rejected.push_back({RecordFileName(r.key),
                          corrupt ? RejectReason::kBadChecksum : RejectReason::kUnreadable,
                          s.message()});
    }
    if (options.progress) options.progress(progress);
  }
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
    report.quarantined += c.quarantined.size();
    STRATA_RETURN_IF_ERROR(c.first_error);
  }
  for (RejectedFile& r : rejected) {
    const RejectAction action = options.repair ? ActionFor(r.reason) : RejectAction::kLeave;
    report.problems.push_back({path, std::move(r.name), r.reason, std::move(r.detail),
                               action == RejectAction::kRemove,
                               action == RejectAction::kQuarantine});
  }
  ++report.directories;
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> FindNamespaceDirs(FileSystem& fs, const std::string& path) {
  if (ExpectationFromDirName(BaseName(path)).ok()) return std::vector<std::string>{path};
  STRATA_ASSIGN_OR_RETURN(int fd, fs.OpenDirectory(path, DirectoryMissing::kFail));
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
    STRATA_ASSIGN_OR_RETURN(int fd, fs.OpenDirectory(dir, DirectoryMissing::kFail));
    Result<ScanReport> scan = ScanRecordDirectory(fs, fd, expect);
    fs.Close(fd);
    if (!scan.ok()) return scan.status().WithContext(dir);
    out.push_back({dir, std::move(*scan)});
  }
  return out;
}

}  // namespace strata
