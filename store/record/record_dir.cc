#include "store/record/record_dir.h"

#include <sys/sysmacros.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

namespace strata {

namespace {

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string DescribeHolder(const FileInfo& dir) {
  std::optional<int> pid = FindFlockHolder(ReadSmallFile("/proc/locks"), dir.device, dir.inode);
  if (!pid) return "another process (holder unknown)";
  std::string comm = ReadSmallFile("/proc/" + std::to_string(*pid) + "/comm");
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return "pid " + std::to_string(*pid) + (comm.empty() ? "" : " (" + comm + ")");
}

uint64_t ParseHexField(std::string_view s, bool* ok) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  *ok = *ok && ec == std::errc() && p == s.data() + s.size();
  return v;
}

}  // namespace

std::string RecordDirPath(const std::string& base, const NamespaceIdentity& identity,
                          const LayoutFingerprint& fingerprint) {
  std::string path = base;
  if (!path.empty() && path.back() != '/') path += '/';
  return path + NamespaceDirName(identity, fingerprint);
}

// /proc/locks lines: "<id>: FLOCK  ADVISORY  WRITE <pid> <maj hex>:<min hex>:<inode> 0 EOF";
// waiters carry "->" after the id and are skipped.
std::optional<int> FindFlockHolder(std::string_view proc_locks, uint64_t device, uint64_t inode) {
  std::istringstream lines{std::string(proc_locks)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string id, kind, mode, access, pid_text, where;
    fields >> id >> kind;
    if (kind != "FLOCK") continue;
    fields >> mode >> access >> pid_text >> where;
    const size_t c1 = where.find(':');
    const size_t c2 = where.find(':', c1 == std::string::npos ? c1 : c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos) continue;
    bool ok = true;
    const uint64_t major_id = ParseHexField(std::string_view(where).substr(0, c1), &ok);
    const uint64_t minor_id =
        ParseHexField(std::string_view(where).substr(c1 + 1, c2 - c1 - 1), &ok);
    uint64_t ino = 0;
    const std::string_view ino_text = std::string_view(where).substr(c2 + 1);
    auto [p, ec] = std::from_chars(ino_text.data(), ino_text.data() + ino_text.size(), ino);
    ok = ok && ec == std::errc() && p == ino_text.data() + ino_text.size();
    if (!ok || ino != inode || major_id != major(device) || minor_id != minor(device)) continue;
    int pid = 0;
    auto [pp, pec] = std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid);
    if (pec == std::errc() && pid > 0) return pid;
  }
  return std::nullopt;
}

Result<ScanReport> ScanRecordDirectory(FileSystem& fs, int dir_fd, const RecordExpectation& expect,
                                       OrphanRule orphans) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, fs.List(dir_fd));
  ScanReport report;
  for (const std::string& name : names) {
    ParsedName parsed = ParseRecordName(name);
    switch (parsed.kind) {
      case NameKind::kOther: report.ignored.push_back(name); continue;
      case NameKind::kTemporary:
        report.rejected.push_back({name, RejectReason::kTemporary, "unfinished write"});
        continue;
      case NameKind::kBadRecord:
        report.rejected.push_back({name, RejectReason::kBadName, parsed.error});
        continue;
      case NameKind::kRecord: break;
    }
    Result<FileInfo> info = fs.StatAt(dir_fd, name);
    if (!info.ok()) {
      // Gone since the listing: nothing to load or remove.
      if (info.status().code() == StatusCode::kNotFound) continue;
      report.rejected.push_back({name, RejectReason::kUnreadable, info.status().message()});
      continue;
    }
    Result<RecordHeader> header = Status::NotFound("not read");
    if (info->is_regular) {
      Result<int> fd = fs.OpenAt(dir_fd, name, OpenFor::kRead);
      if (!fd.ok()) {
        header = fd.status();
      } else {
        header = ReadRecordHeader(fs, *fd);
        fs.Close(*fd);
      }
    }
    auto verdict = ClassifyRecordFile(name, parsed.key, *info, header, expect);
    if (auto* r = std::get_if<ScannedRecord>(&verdict)) {
      report.records.push_back(std::move(*r));
    } else {
      report.rejected.push_back(std::move(std::get<RejectedFile>(verdict)));
    }
  }
  if (orphans == OrphanRule::kApply) {
    RemoveOrphans(report.records, report.rejected);
  } else {
    std::sort(report.records.begin(), report.records.end(),
              [](const ScannedRecord& a, const ScannedRecord& b) { return a.key < b.key; });
  }
  return report;
}

Result<std::unique_ptr<RecordDir>> RecordDir::Open(FileSystem& fs, const std::string& path,
                                                   Create create) {
  STRATA_ASSIGN_OR_RETURN(int fd,
                          fs.OpenDirectory(path, create == Create::kYes ? DirectoryMissing::kCreate
                                                                        : DirectoryMissing::kFail));
  Status locked = fs.LockExclusive(fd);
  if (!locked.ok()) {
    std::string holder = "another process";
    if (Result<FileInfo> info = fs.Stat(fd); info.ok()) holder = DescribeHolder(*info);
    fs.Close(fd);
    if (locked.code() == StatusCode::kBusy) {
      return Status::Busy("record directory '" + path + "' is in use by " + holder +
                          "; one process owns a record directory");
    }
    return locked.WithContext("lock record directory '" + path + "'");
  }
  return std::unique_ptr<RecordDir>(new RecordDir(fs, fd, path));
}

RecordDir::~RecordDir() { fs_.Close(fd_); }

RecordDir::Cleanup RecordDir::RemoveRejected(const ScanReport& report) {
  Cleanup c;
  auto note = [&](const Status& s) {
    if (!s.ok() && c.first_error.ok()) c.first_error = s;
  };
  std::optional<int> quarantine_fd;  // opened (and created) on first use
  for (const RejectedFile& r : report.rejected) {
    switch (ActionFor(r.reason)) {
      case RejectAction::kLeave: continue;  // never touch what is not a file
      case RejectAction::kRemove: {
        Status s = fs_.Unlink(fd_, r.name);
        if (s.ok()) {
          ++c.removed;
        } else if (s.code() != StatusCode::kNotFound) {
          note(s.WithContext(path_));
        }
        continue;
      }
      case RejectAction::kQuarantine: {
        if (!quarantine_fd) {
          Result<int> q = fs_.OpenDirectory(path_ + "/" + std::string(kQuarantineDirName),
                                            DirectoryMissing::kCreate);
          if (!q.ok()) {
            note(q.status().WithContext("quarantine " + r.name + " (" + r.detail + ")"));
            continue;
          }
          quarantine_fd = *q;
        }
        const std::string to = std::string(kQuarantineDirName) + "/" + r.name;
        Status s = fs_.Rename(fd_, r.name, to);
        if (s.ok()) {
          c.quarantined.push_back(r.name + ": " + r.detail);
        } else if (s.code() != StatusCode::kNotFound) {
          note(s.WithContext(path_ + ": quarantine " + r.name + " (" + r.detail + ")"));
        }
        continue;
      }
    }
  }
  for (const ScannedRecord& r : report.records) {
    if (r.row_state != RowState::kPartial) continue;
    Status s = TruncateRecordRow(fs_, fd_, r.header, Durability::kNone);
    if (s.ok()) ++c.truncated;
    note(s.WithContext(path_));
  }
  if (quarantine_fd) {
    if (!c.quarantined.empty()) note(fs_.Sync(*quarantine_fd).WithContext("fsync quarantine"));
    fs_.Close(*quarantine_fd);
  }
  if (c.removed + c.truncated + c.quarantined.size() > 0) {
    note(fs_.Sync(fd_).WithContext("fsync " + path_));
  }
  return c;
}

}  // namespace strata
