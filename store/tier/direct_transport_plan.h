// Batch planning for the direct transport (seed 2.6): which cuFile entries
// move one window of one rank's record job, and how they split into batches.
// Offsets come from the record format (RecordLayout, RecordExtents): every
// plane and row starts 4 KiB aligned in the file, so each entry's file
// offset is aligned; an entry's size is the plane's unpadded unit bytes (the
// file's padding reads as zeros, preallocated by fallocate). Pure arithmetic.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "store/base/ids.h"
#include "store/record/record_header.h"
#include "store/record/record_layout.h"
#include "store/transfer/copy_engine.h"
#include "store/transfer/transfers.h"

namespace strata {

// One I/O: `bytes` between device memory at `device` and the file at
// `file_offset`.
struct DirectIoEntry {
  uint64_t device = 0;
  uint64_t file_offset = 0;
  uint64_t bytes = 0;
  friend bool operator==(const DirectIoEntry&, const DirectIoEntry&) = default;
};

// One window of one rank: file pages [first_file_page, + page_ids.size())
// to or from `page_ids`, and optionally the row.
struct DirectWindow {
  TransferDirection direction = TransferDirection::kDeviceToHost;  // to the file
  uint32_t rank = 0;
  std::span<const PageId> page_ids = {};  // at most kMaxWindowPages
  uint32_t first_file_page = 0;
  bool replicated_pages = false;  // the file holds rank 0's share only
  std::optional<StateSlot> row_slot = std::nullopt;
  bool replicated_row = false;
};

// The window's entries, one per plane per page, then the row. A write of a
// replicated segment from a rank other than 0 has no entries for it (rank 0
// writes the one share); a read of one fans the share into every rank.
std::vector<DirectIoEntry> PlanDirectWindow(const RecordLayout& layout,
                                            const RecordExtents& extents, const RankPlanes& planes,
                                            const DirectWindow& window);

// Consecutive runs of `entries` of at most `max_entries` entries and
// `max_bytes` bytes; an entry larger than `max_bytes` is split first into
// pieces of at most `max_bytes` (4 KiB multiples, so offsets stay aligned).
std::vector<std::vector<DirectIoEntry>> SplitDirectBatches(std::span<const DirectIoEntry> entries,
                                                           uint32_t max_entries,
                                                           uint64_t max_bytes);

// A worker's share of a list of entries: indices [first, end).
struct DirectIoShare {
  size_t first = 0;
  size_t end = 0;
  friend bool operator==(const DirectIoShare&, const DirectIoShare&) = default;
};

// Consecutive shares of `entries` for at most `workers` workers (synchronous
// cuFile I/O runs one share per thread): min(workers, entries.size()) shares,
// each non-empty, in order, covering every entry once, cut so each holds
// about an equal part of the bytes (the first shares that reach their part
// stop there). No shares for no entries; `workers` 0 counts as 1.
std::vector<DirectIoShare> SplitAmongWorkers(std::span<const DirectIoEntry> entries,
                                             uint32_t workers);

}  // namespace strata
