// The pure part of a direct transport job (seed 2.6): the record header a
// job writes or expects, its cuFile batches over every rank of this process,
// the device pieces of its checksums, and the comparison of computed with
// stored checksums. No I/O, no threads, no clock reads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "store/base/record_job.h"
#include "store/record/fingerprint.h"
#include "store/record/record_header.h"
#include "store/record/record_layout.h"
#include "store/tier/device_record_checksums.h"
#include "store/tier/direct_transport_plan.h"

namespace strata {

// What every record header of this process's files shares.
struct RecordHeaderBasis {
  NamespaceIdentity identity{};
  LayoutFingerprint fingerprint{};
  RecordShape shape;
};

// The header of `job`'s file (kStore, kFetch, kTruncate fields) with the
// given row checksum and creation time; the same header StagedTransport
// writes for the job.
RecordHeader DirectRecordHeader(const RecordHeaderBasis& basis, const RecordJob& job,
                                uint64_t row_checksum, uint64_t created_unix_ns);

struct DirectBatchBounds {
  uint32_t max_entries = 128;           // cuFile's batch limit (kCuFileMaxBatchEntries)
  uint64_t max_bytes = kMaxBatchBytes;  // per batch; a 4 KiB multiple
};

// The batches of a kStore (kDeviceToHost, file pages from 0) or kFetch
// (kHostToDevice, file pages from job.first_page) job: for each rank, its
// windows of at most kMaxWindowPages pages (the row with the last window),
// each window split by `bounds`. `planes` holds one entry per rank.
std::vector<std::vector<DirectIoEntry>> PlanDirectJob(
    const RecordLayout& layout, const RecordExtents& extents, std::span<const RankPlanes> planes,
    const RecordJob& job, TransferDirection direction, const DirectBatchBounds& bounds);

// The checksum record of each page in `page_ids` (stored page record: every
// rank's planes, or rank 0's share when `replicated`), then, when `row_slot`
// is set, the stored row segment's.
std::vector<DeviceChecksumRecord> DirectChecksumRecords(const RecordLayout& layout,
                                                        std::span<const RankPlanes> planes,
                                                        std::span<const PageId> page_ids,
                                                        bool replicated_pages,
                                                        std::optional<StateSlot> row_slot,
                                                        bool replicated_row);

// The checksum segment's bytes for `page_sums` (u64 little-endian each), and
// back: the u64 of page `page` from a segment read starting at page 0.
void EncodePageChecksums(std::span<const uint64_t> page_sums, std::span<std::byte> out);
uint64_t StoredPageChecksum(std::span<const std::byte> segment, uint32_t page);

// Compares the computed checksums of file pages [first_page, + pages) (and
// of the row, when `computed_row` is set) with the stored ones. kCorruption
// naming the first bad page (or the row), as the staged read reports it.
struct ChecksumMismatch {
  Status status;
  std::optional<uint32_t> bad_page;  // none: the row
};
std::optional<ChecksumMismatch> CompareDirectChecksums(std::span<const std::byte> segment,
                                                       uint32_t first_page, uint32_t tail_pages,
                                                       std::span<const uint64_t> computed_pages,
                                                       std::optional<uint64_t> computed_row,
                                                       uint64_t stored_row);

}  // namespace strata
