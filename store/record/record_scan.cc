#include "store/record/record_scan.h"

#include <algorithm>
#include <unordered_set>

namespace strata {

std::string_view RejectReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kTemporary: return "temporary";
    case RejectReason::kBadName: return "bad-name";
    case RejectReason::kNotAFile: return "not-a-file";
    case RejectReason::kUnreadable: return "unreadable";
    case RejectReason::kBadHeader: return "bad-header";
    case RejectReason::kWrongIdentity: return "wrong-identity";
    case RejectReason::kWrongFingerprint: return "wrong-fingerprint";
    case RejectReason::kWrongShape: return "wrong-shape";
    case RejectReason::kNameMismatch: return "name-mismatch";
    case RejectReason::kBadSize: return "bad-size";
    case RejectReason::kBadChecksum: return "bad-checksum";
    case RejectReason::kOrphan: return "orphan";
    case RejectReason::kOrphanOfUnreadable: return "orphan-of-unreadable";
  }
  return "unknown";
}

RejectAction ActionFor(RejectReason reason) {
  switch (reason) {
    case RejectReason::kNotAFile: return RejectAction::kLeave;
    case RejectReason::kUnreadable:
    case RejectReason::kOrphanOfUnreadable: return RejectAction::kQuarantine;
    default: return RejectAction::kRemove;
  }
}

RecordExpectation ExpectationFor(const NamespaceIdentity& identity,
                                 const LayoutFingerprint& fingerprint,
                                 const CacheGeometry& geometry) {
  RecordExpectation e;
  std::copy_n(identity.begin(), kIdentityPrefixBytes, e.identity_prefix.begin());
  e.identity = identity;
  e.fingerprint = fingerprint;
  e.shape = ShapeOf(geometry);
  return e;
}

Result<RecordExpectation> ExpectationFromDirName(std::string_view dir_name) {
  constexpr size_t kPrefixHex = 2 * kIdentityPrefixBytes;
  constexpr size_t kFingerprintHex = 2 * sizeof(LayoutFingerprint);
  if (dir_name.size() != kPrefixHex + 1 + kFingerprintHex || dir_name[kPrefixHex] != '-') {
    return Status::InvalidArgument("'" + std::string(dir_name) +
                                   "' is not a record directory name (<16 hex>-<32 hex>)");
  }
  RecordExpectation e;
  STRATA_RETURN_IF_ERROR(ParseHex(dir_name.substr(0, kPrefixHex), e.identity_prefix));
  STRATA_RETURN_IF_ERROR(ParseHex(dir_name.substr(kPrefixHex + 1), e.fingerprint));
  return e;
}

std::array<uint64_t, kRejectReasonCount> ScanReport::CountsByReason() const {
  std::array<uint64_t, kRejectReasonCount> counts{};
  for (const RejectedFile& r : rejected) ++counts[static_cast<size_t>(r.reason)];
  return counts;
}

uint64_t ScanReport::record_bytes() const {
  uint64_t total = 0;
  for (const ScannedRecord& r : records) total += r.file_bytes;
  return total;
}

std::variant<ScannedRecord, RejectedFile> ClassifyRecordFile(std::string_view name,
                                                             const PrefixKey& name_key,
                                                             const FileInfo& info,
                                                             const Result<RecordHeader>& header,
                                                             const RecordExpectation& expect) {
  auto reject = [&](RejectReason reason, std::string detail) {
    return RejectedFile{std::string(name), reason, std::move(detail)};
  };
  if (!info.is_regular) return reject(RejectReason::kNotAFile, "not a regular file");
  if (!header.ok()) {
    const bool unreadable = header.status().code() != StatusCode::kCorruption;
    return reject(unreadable ? RejectReason::kUnreadable : RejectReason::kBadHeader,
                  header.status().message());
  }
  const RecordHeader& h = *header;
  if (!std::equal(expect.identity_prefix.begin(), expect.identity_prefix.end(),
                  h.identity.begin()) ||
      (expect.identity && *expect.identity != h.identity)) {
    return reject(RejectReason::kWrongIdentity,
                  "namespace identity " + ToHex(h.identity) + " is not this directory's");
  }
  if (h.fingerprint != expect.fingerprint) {
    return reject(RejectReason::kWrongFingerprint, "layout fingerprint " + ToHex(h.fingerprint) +
                                                       " is not this directory's " +
                                                       ToHex(expect.fingerprint));
  }
  if (expect.shape && *expect.shape != h.shape) {
    return reject(RejectReason::kWrongShape,
                  "page-token count or plane/row sizes differ from the loading geometry");
  }
  if (h.key != name_key) {
    return reject(RejectReason::kNameMismatch,
                  "header key " + h.key.ToFileStem() + " does not match the file name");
  }
  Result<RecordExtents> extents = ComputeExtents(h);
  if (!extents.ok()) return reject(RejectReason::kBadHeader, extents.status().message());
  Result<RowState> row = RowStateFromSize(*extents, info.bytes);
  if (!row.ok()) return reject(RejectReason::kBadSize, row.status().message());
  ScannedRecord r;
  r.key = h.key;
  r.parent = h.parent;
  r.bucket = h.bucket;
  r.tail_page_count = h.tail_page_count;
  r.row_state = *row;
  r.row_present = *row == RowState::kPresent;
  r.pages_replicated = h.pages_replicated;
  r.row_replicated = h.row_replicated;
  r.file_bytes = info.bytes;
  r.mtime_unix_ns = info.mtime_unix_ns;
  r.header = h;
  r.extents = *extents;
  return r;
}

void RemoveOrphans(std::vector<ScannedRecord>& records, std::vector<RejectedFile>& rejected) {
  std::sort(records.begin(), records.end(),
            [](const ScannedRecord& a, const ScannedRecord& b) { return a.key < b.key; });
  std::unordered_set<PrefixKey> kept;
  std::unordered_set<PrefixKey> present;
  for (const ScannedRecord& r : records) present.insert(r.key);
  // Names of files that could not be read, then of the records below them.
  std::unordered_set<std::string> unreadable;
  for (const RejectedFile& f : rejected) {
    if (f.reason == RejectReason::kUnreadable) unreadable.insert(f.name);
  }
  std::vector<ScannedRecord> out;
  out.reserve(records.size());
  for (ScannedRecord& r : records) {
    if (!r.parent || kept.contains(*r.parent)) {
      kept.insert(r.key);
      out.push_back(std::move(r));
      continue;
    }
    const bool parent_on_disk = present.contains(*r.parent);
    const std::string name = RecordFileName(r.key);
    if (unreadable.contains(RecordFileName(*r.parent))) {
      unreadable.insert(name);
      rejected.push_back({name, RejectReason::kOrphanOfUnreadable,
                          "parent " + r.parent->ToFileStem() + " is unreadable"});
      continue;
    }
    rejected.push_back({name, RejectReason::kOrphan,
                        "parent " + r.parent->ToFileStem() +
                            (parent_on_disk ? " is itself removed" : " is missing")});
  }
  records = std::move(out);
}

}  // namespace strata
