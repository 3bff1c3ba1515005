// The logic behind `strata fsck` and `strata inspect`: find the namespace
// directories under a path, verify or list their record files. Output
// formatting lives in cmd_fsck.cc / cmd_inspect.cc; tests drive these.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "store/io/file_system.h"
#include "store/record/record_scan.h"

namespace strata {

// `path` itself when its name is a namespace directory name
// ("<16 hex>-<32 hex>"), else every such subdirectory of it, sorted.
// kNotFound when there is none.
Result<std::vector<std::string>> FindNamespaceDirs(FileSystem& fs, const std::string& path);

struct FsckProblem {
  std::string dir;
  std::string name;
  RejectReason reason = RejectReason::kBadHeader;
  std::string detail;
  bool removed = false;      // unlinked by --repair (proven bad)
  bool quarantined = false;  // moved into quarantine/ by --repair (could not be read)
};

struct FsckProgress {
  std::string dir;
  uint64_t records_done = 0;
  uint64_t records_total = 0;
  uint64_t bytes_done = 0;
};

struct FsckOptions {
  // Remove bad, temporary and orphaned files, quarantine unreadable ones
  // (RejectAction); truncate torn rows.
  bool repair = false;
  // Called after each verified record (the caller rate-limits its output).
  std::function<void(const FsckProgress&)> progress;
};

struct FsckReport {
  uint64_t directories = 0;
  uint64_t records_ok = 0;      // headers, sizes and every checksum verified
  uint64_t bytes_verified = 0;  // file bytes of those records
  uint64_t torn_rows = 0;       // records whose row segment is partial (row treated as absent)
  uint64_t removed = 0;         // files removed by --repair
  uint64_t quarantined = 0;     // unreadable files moved into quarantine/ by --repair
  uint64_t truncated = 0;       // torn rows cut back by --repair
  std::vector<FsckProblem> problems;
  bool clean() const { return problems.empty(); }
};

// Verifies every record file under `path` (see FindNamespaceDirs): each
// directory is locked (a running store makes this fail with kBusy), scanned,
// and each accepted record read back page by page (VerifyRecordFile, memory
// bounded by kVerifyScratchBytes whatever a header claims), checking every
// page and row checksum. Records whose parent is bad become orphans. A file
// that cannot be read is reported as unreadable, never as corrupt.
Result<FsckReport> RunFsck(FileSystem& fs, const std::string& path, const FsckOptions& options);

struct InspectedDir {
  std::string dir;
  ScanReport scan;
};

// Lists the record files under `path` without locking or changing anything
// (a live store may make the listing stale).
Result<std::vector<InspectedDir>> RunInspect(FileSystem& fs, const std::string& path);

}  // namespace strata
