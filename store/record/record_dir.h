// RecordDir: one process's ownership of a namespace's record directory, and
// the startup scan of it (seed 2.5). Open takes flock(LOCK_EX|LOCK_NB) and the
// descriptor is held, with the lock, until the RecordDir is destroyed; a
// second owner fails at once with an error naming the directory and, when
// /proc/locks tells, the holding process. Not thread-safe: one owner thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/base/status.h"
#include "store/io/file_system.h"
#include "store/record/record_scan.h"

namespace strata {

// "<base>/<identity prefix hex>-<fingerprint hex>"
std::string RecordDirPath(const std::string& base, const NamespaceIdentity& identity,
                          const LayoutFingerprint& fingerprint);

// The pid of the process holding a FLOCK on the file with this device and
// inode, parsed from /proc/locks text. Pure.
std::optional<int> FindFlockHolder(std::string_view proc_locks, uint64_t device, uint64_t inode);

// Whether a scan applies the orphan rule itself (kNo: the caller will, after
// rejecting more records, e.g. on checksums).
enum class OrphanRule : unsigned char { kApply, kDefer };

// Reads every entry of the directory open at `dir_fd` and classifies it
// (store/record/record_scan.h). Changes nothing on disk; safe without the lock (a
// concurrent writer may make it stale).
Result<ScanReport> ScanRecordDirectory(FileSystem& fs, int dir_fd, const RecordExpectation& expect,
                                       OrphanRule orphans = OrphanRule::kApply);

class RecordDir {
 public:
  enum class Create : unsigned char { kNo, kYes };

  static Result<std::unique_ptr<RecordDir>> Open(FileSystem& fs, const std::string& path,
                                                 Create create);
  ~RecordDir();
  RecordDir(const RecordDir&) = delete;
  RecordDir& operator=(const RecordDir&) = delete;

  // The locked directory's descriptor; valid for this object's life.
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

  Result<ScanReport> Scan(const RecordExpectation& expect,
                          OrphanRule orphans = OrphanRule::kApply) {
    return ScanRecordDirectory(fs_, fd_, expect, orphans);
  }

  struct Cleanup {
    uint64_t removed = 0;    // files unlinked
    uint64_t truncated = 0;  // torn rows cut back to the row segment offset
    // "<name>: <why>" of each file moved into "<dir>/quarantine/" (for the
    // caller's log).
    std::vector<std::string> quarantined;
    Status first_error;  // the first removal or move that failed (the rest were tried)
  };
  // Acts on every rejected file of `report` as ActionFor says: unlinks those
  // proven bad (temporary, corrupt, foreign, orphaned), renames those that
  // could not be read into the quarantine subfolder (created 0700 when
  // needed; a file already there under the same name is replaced), and
  // truncates records whose row is partial; then fsyncs the directories it
  // changed once. A read error never deletes a file: when the move fails too,
  // the file stays where it is and first_error names it.
  Cleanup RemoveRejected(const ScanReport& report);

 private:
  RecordDir(FileSystem& fs, int fd, std::string path) : fs_(fs), fd_(fd), path_(std::move(path)) {}
  FileSystem& fs_;
  int fd_;
  std::string path_;
};

}  // namespace strata
