// Record files in a record directory (docs/formats.md, "Record files"): their
// names, what a file's size says about its row, and the synchronous steps of
// writing, truncating and removing one. The payload I/O itself runs on the
// disk thread (store/disk/disk_thread.h); every syscall here goes through
// FileSystem so that a fault-injecting implementation can be substituted.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "store/base/prefix_key.h"
#include "store/base/status.h"
#include "store/io/file_system.h"
#include "store/record/record_header.h"

namespace strata {

inline constexpr std::string_view kRecordSuffix = ".ckpt";
// Any name with this suffix is an unfinished write; the scan removes it.
inline constexpr std::string_view kTemporarySuffix = ".tmp";
// Created and removed by ProbeDirectIo.
inline constexpr std::string_view kDirectIoProbeName = ".strata-direct-io-probe.tmp";

// Whether a change must survive power loss before the job reports success:
// kSync fdatasyncs the file and fsyncs the directory after a rename or unlink.
enum class Durability : unsigned char { kNone, kSync };

// "<consumed %016x>-<digest %032x>.ckpt"
std::string RecordFileName(const PrefixKey& key);
// RecordFileName + ".tmp"
std::string TemporaryFileName(const PrefixKey& key);

enum class NameKind : unsigned char {
  kRecord,     // "<stem>.ckpt" with a valid stem
  kBadRecord,  // ends in ".ckpt" but the stem does not parse
  kTemporary,  // ends in ".tmp"
  kOther,      // anything else: not ours, left alone
};
struct ParsedName {
  NameKind kind = NameKind::kOther;
  PrefixKey key;      // kRecord only
  std::string error;  // kBadRecord only
};
ParsedName ParseRecordName(std::string_view name);

// What a file of `file_bytes` holds, given its header's extents.
enum class RowState : unsigned char {
  kPresent,  // the file covers the row segment exactly
  kAbsent,   // the file ends at the row segment offset (written or compacted without row)
  kPartial,  // the file ends inside the row segment: the row is absent
};
// kCorruption naming the segment the file ends in when it is shorter than its
// pages, or the excess when it is longer than the whole record.
Result<RowState> RowStateFromSize(const RecordExtents& extents, uint64_t file_bytes);

// Reads and decodes the header of an open record file (any open mode; uses an
// aligned buffer so O_DIRECT descriptors work).
Result<RecordHeader> ReadRecordHeader(FileSystem& fs, int fd);

// Creates "<key>.ckpt.tmp" (new, 0600, O_EXCL|O_NOFOLLOW) for O_DIRECT
// writing and preallocates `file_bytes`. A file or symlink already at that
// name is unlinked first (never followed). Returns the descriptor; on error
// nothing is left behind.
Result<int> BeginRecordWrite(FileSystem& fs, int dir_fd, const PrefixKey& key, uint64_t file_bytes);
// Renames the finished temporary file over "<key>.ckpt". The caller has
// closed (and, for durability, fdatasync'd) it, and fsyncs the directory.
Status CommitRecordWrite(FileSystem& fs, int dir_fd, const PrefixKey& key);
// Removes the temporary file of an abandoned write; a missing file is fine.
Status AbortRecordWrite(FileSystem& fs, int dir_fd, const PrefixKey& key);

// Truncates "<key>.ckpt" at its row segment offset after checking that its
// header matches `expected` (kFailedPrecondition naming the field otherwise).
Status TruncateRecordRow(FileSystem& fs, int dir_fd, const RecordHeader& expected,
                         Durability durability);
// Unlinks "<key>.ckpt"; a file already gone is success.
Status UnlinkRecord(FileSystem& fs, int dir_fd, const PrefixKey& key, Durability durability);

// Checks that the filesystem holding `dir_fd` accepts O_DIRECT writes, with a
// 4 KiB probe file. kFailedPrecondition naming the directory and filesystem
// when it refuses (tmpfs, for one).
Status ProbeDirectIo(FileSystem& fs, int dir_fd, const std::string& dir_path);

}  // namespace strata
