// The decisions of a record-directory scan, as pure functions over what the
// scan read (store/record/record_dir.h does the reading): which files are records the
// index may load, which are rejected and why, and the orphan rule. No I/O.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "store/base/prefix_key.h"
#include "store/io/file_system.h"
#include "store/record/fingerprint.h"
#include "store/record/record_file.h"
#include "store/record/record_header.h"

namespace strata {

inline constexpr size_t kIdentityPrefixBytes = 8;
using IdentityPrefix = std::array<uint8_t, kIdentityPrefixBytes>;

// What every record in one namespace directory must agree with.
struct RecordExpectation {
  IdentityPrefix identity_prefix{};           // from the directory name
  std::optional<NamespaceIdentity> identity;  // the whole identity, when the caller knows it
  LayoutFingerprint fingerprint{};
  std::optional<RecordShape> shape;  // the loading geometry, when the caller has one
};

// What a store expects: its whole identity, fingerprint and geometry.
RecordExpectation ExpectationFor(const NamespaceIdentity& identity,
                                 const LayoutFingerprint& fingerprint,
                                 const CacheGeometry& geometry);
// What a tool that knows only the directory can expect: the identity prefix
// and fingerprint in its name "<16 hex>-<32 hex>" (NamespaceDirName).
Result<RecordExpectation> ExpectationFromDirName(std::string_view dir_name);

// A record the scan accepted: what the index needs to rebuild its node.
struct ScannedRecord {
  PrefixKey key;
  std::optional<PrefixKey> parent;
  Digest128 bucket{};
  uint32_t tail_page_count = 0;
  bool row_present = false;
  RowState row_state = RowState::kAbsent;  // kPartial: a torn row, treated as absent
  bool pages_replicated = false;
  bool row_replicated = false;
  uint64_t file_bytes = 0;
  int64_t mtime_unix_ns = 0;  // seeds the access order
  RecordHeader header;
  RecordExtents extents;
};

enum class RejectReason : unsigned char {
  kTemporary,           // an unfinished write ("*.tmp")
  kBadName,             // "*.ckpt" whose stem is not a key
  kNotAFile,            // a directory or special file with a record name
  kUnreadable,          // open, stat or read failed for a reason other than corruption
  kBadHeader,           // magic, version, checksum, flags or sizes
  kWrongIdentity,       // another namespace's record
  kWrongFingerprint,    // another layout's record
  kWrongShape,          // sizes differ from the loading geometry
  kNameMismatch,        // the file name is not the header's key
  kBadSize,             // shorter than its pages or longer than the record
  kBadChecksum,         // a page or the row fails verification (fsck only)
  kOrphan,              // its parent (or an ancestor) is missing or proven bad
  kOrphanOfUnreadable,  // its parent (or an ancestor) is unreadable, not proven bad
};
inline constexpr size_t kRejectReasonCount = 13;
std::string_view RejectReasonName(RejectReason reason);

// What cleanup does with a rejected file. Only a file proven bad (or an
// unfinished write) is removed; one that could not be read (EIO, EACCES,
// EMFILE, ENOMEM, ...) and the records below it are moved aside intact.
enum class RejectAction : unsigned char {
  kRemove,      // unlink
  kQuarantine,  // rename into kQuarantineDirName, keeping the name
  kLeave,       // touch nothing (not a regular file)
};
RejectAction ActionFor(RejectReason reason);

// The subfolder of a namespace directory that holds quarantined files. The
// scan ignores it (its name is not a record name).
inline constexpr std::string_view kQuarantineDirName = "quarantine";

struct RejectedFile {
  std::string name;
  RejectReason reason = RejectReason::kBadHeader;
  std::string detail;
};

struct ScanReport {
  std::vector<ScannedRecord> records;  // ascending by key
  std::vector<RejectedFile> rejected;
  std::vector<std::string> ignored;  // names that are not ours, left alone
  std::array<uint64_t, kRejectReasonCount> CountsByReason() const;
  uint64_t record_bytes() const;
};

// Classifies one "<key>.ckpt" file from its stat and its header (or the error
// reading it). Pure.
std::variant<ScannedRecord, RejectedFile> ClassifyRecordFile(std::string_view name,
                                                             const PrefixKey& name_key,
                                                             const FileInfo& info,
                                                             const Result<RecordHeader>& header,
                                                             const RecordExpectation& expect);

// The orphan rule: removes from `records` every record whose parent is not in
// it, then their descendants, appending each to `rejected`: as
// kOrphanOfUnreadable when the missing ancestor is in `rejected` as
// kUnreadable (so it is quarantined with it), else as kOrphan. Leaves
// `records` sorted ascending by key. Relies on parent.consumed < key.consumed,
// which DecodeRecordHeader enforces.
void RemoveOrphans(std::vector<ScannedRecord>& records, std::vector<RejectedFile>& rejected);

}  // namespace strata
