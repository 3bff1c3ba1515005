// The messages ranks exchange (docs/wire.md), as plain values. The codec
// (codec.h) turns them into Cap'n Proto frames and back; nothing here depends
// on Cap'n Proto or Asio.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "store/base/digest.h"
#include "store/base/ids.h"
#include "store/base/prefix_key.h"
#include "store/base/record_job.h"
#include "store/base/status.h"

namespace strata::wire {

// Bumped on any change a peer of the previous version would misread.
// 2: Job carries the whole record job (key, parent, bucket, pages, row slot).
// 3: host-data jobs (Job.hostData, hostRow) and their bytes (JobData).
inline constexpr uint32_t kProtocolVersion = 3;

// Limits every message obeys, checked when encoding and when decoding.
inline constexpr uint32_t kWorldSizeMax = 4096;
inline constexpr size_t kTextBytesMax = 4096;      // reasons and error texts
inline constexpr size_t kJobPageIdsMax = 1 << 20;  // pages of one record
inline constexpr size_t kScanRecordsPerFrameMax = 32768;
inline constexpr size_t kAgreementEntriesPerFrameMax = 65536;
// A host-data job's bytes (one rank's share of a record) travel in JobData
// chunks of at most kJobDataChunkBytesMax, totalling at most
// kJobDataBytesMax.
inline constexpr size_t kJobDataChunkBytesMax = size_t{4} << 20;
inline constexpr uint64_t kJobDataBytesMax = uint64_t{4} << 30;

// Limits on a frame, checked before it is decoded. The largest message the
// limits above allow encodes well under kFrameBytesMax.
inline constexpr size_t kFrameBytesMax = size_t{16} << 20;
inline constexpr size_t kFrameSegmentsMax = 512;
inline constexpr int kNestingLimit = 16;

// A join nonce handed out by the rendezvous.
using Nonce = std::array<uint8_t, 16>;

// Peer -> rank zero, the first message on a link.
struct Hello {
  uint32_t protocol_version = kProtocolVersion;
  Nonce nonce{};
  RankId rank;
  uint32_t world_size = 0;  // 1..kWorldSizeMax, above rank
  Digest128 layout_fingerprint{};
  uint64_t disk_limit_bytes = 0;
  bool has_disk_store = false;
  friend bool operator==(const Hello&, const Hello&) = default;
};

struct HelloAccept {
  uint32_t protocol_version = kProtocolVersion;
  friend bool operator==(const HelloAccept&, const HelloAccept&) = default;
};

struct HelloReject {
  std::string reason;  // at most kTextBytesMax bytes
  friend bool operator==(const HelloReject&, const HelloReject&) = default;
};

// One record file a peer's scan kept.
struct ScanRecord {
  PrefixKey key;                    // consumed > 0
  std::optional<PrefixKey> parent;  // consumed below key.consumed
  Digest128 header_digest{};        // header ignoring layout fingerprint and row checksum
  bool row_present = false;
  uint64_t size_bytes = 0;  // > 0
  friend bool operator==(const ScanRecord&, const ScanRecord&) = default;
};

// Peer -> rank zero after HelloAccept. A scan larger than one frame is sent
// as several summaries; `last` marks the final one.
struct ScanSummary {
  std::vector<ScanRecord> records;  // at most kScanRecordsPerFrameMax
  bool last = true;
  friend bool operator==(const ScanSummary&, const ScanSummary&) = default;
};

enum class Verdict : uint8_t {
  kKeep,
  kTruncate,  // keep the pages, drop the row segment
  kDelete,
};

struct AgreementEntry {
  PrefixKey key;
  Verdict verdict = Verdict::kKeep;
  friend bool operator==(const AgreementEntry&, const AgreementEntry&) = default;
};

// Rank zero -> peer: one verdict per record the peer summarized, in chunks
// like ScanSummary.
struct Agreement {
  std::vector<AgreementEntry> entries;  // at most kAgreementEntriesPerFrameMax
  bool last = true;
  friend bool operator==(const Agreement&, const Agreement&) = default;
};

// Peer -> rank zero once its files match the agreement, or why they do not.
struct AgreementApplied {
  Status status;  // message at most kTextBytesMax bytes
  friend bool operator==(const AgreementApplied&, const AgreementApplied&) = default;
};

// Rank zero -> peer: run the same record job on the peer's own transport
// (store/tier/disk_transport.h): the file "<key stem>.ckpt" in the peer's record
// directory, the same page ids, first page and state slot. Rules: key
// consumed > 0; parent below the key; a store names exactly tail_pages page
// ids from page 0; a fetch names tail_pages - first_page ids; a store or
// fetch names at least one page or a row slot; a truncate or unlink names
// neither. A host-data store or fetch (RecordJob::host_data) names no page
// id and no slot, and moves at least one page or the row (host_row).
struct Job {
  RecordJob record;
  friend bool operator==(const Job&, const Job&) = default;
};

// Peer -> rank zero: the outcome of one Job on that rank. filesystem_full
// survives aggregation so the store defers instead of failing; it is only set
// with a non-OK status.
struct JobDone {
  JobId id;
  RankId rank;
  Status status;  // message at most kTextBytesMax bytes; empty when OK
  bool filesystem_full = false;
  uint64_t bytes = 0;
  friend bool operator==(const JobDone&, const JobDone&) = default;
};

// The bytes of a host-data job (RecordJob::host_data), in order: rank zero ->
// peer before a store's Job, peer -> rank zero before a fetch's OK JobDone.
// The bytes are the rank's share of the record in its stored layout: the
// page records read or written, in order, then the row segment. Chunks of
// one job arrive in order from offset 0, each declaring the same total.
// Rules: 0 < total <= kJobDataBytesMax; 0 < data <= kJobDataChunkBytesMax;
// offset + data <= total.
struct JobData {
  JobId id;
  uint64_t offset = 0;
  uint64_t total = 0;
  std::vector<std::byte> data;
  friend bool operator==(const JobData&, const JobData&) = default;
};

// Rank zero -> peer: accept no new job and finish the accepted ones.
struct Drain {
  friend bool operator==(const Drain&, const Drain&) = default;
};

// Peer -> rank zero: every accepted job finished and its transport drained,
// or why not.
struct Drained {
  Status status;
  friend bool operator==(const Drained&, const Drained&) = default;
};

// Either side: the sender closes the link on purpose.
struct Close {
  std::string reason;  // at most kTextBytesMax bytes
  friend bool operator==(const Close&, const Close&) = default;
};

struct Heartbeat {
  uint64_t sequence = 0;
  friend bool operator==(const Heartbeat&, const Heartbeat&) = default;
};

using Message =
    std::variant<Hello, HelloAccept, HelloReject, ScanSummary, Agreement, AgreementApplied, Job,
                 JobDone, Drain, Drained, Close, Heartbeat, JobData>;

// "Hello", "JobDone", ...: for logs and errors.
std::string_view MessageName(const Message& message);
std::string_view VerdictName(Verdict verdict);

// Checks every limit and rule stated above. Returns kInvalidArgument naming
// the message, the field and what is wrong.
Status CheckMessage(const Message& message);

// `text` cut to at most kTextBytesMax bytes, and `status` with its message
// cut the same way: what a reason or completion may carry on the wire.
std::string FitText(std::string text);
Status FitForWire(const Status& status);

}  // namespace strata::wire
