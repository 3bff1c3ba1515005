// Copy-out fused with the record checksums (issue 18, docs/performance.md
// "Disk-path CPU cost"): one rank's transfer thread copies each page record
// and the row segment into host memory in pieces of at most kHashPieceBytes
// and hashes every piece right after copying it, while it is in this core's
// cache, instead of the disk thread hashing the staging bytes again later
// from DRAM. The sums are XXH3 over exactly the host bytes left behind
// (planes in order, zeroed padding included): the same values the disk
// thread would compute over the same bytes, so record files do not change.
//
// Used on the rank's transfer thread only (ThreadedTransfers::RunJob).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "store/record/geometry.h"
#include "store/record/record_layout.h"
#include "store/transfer/copy_engine.h"
#include "store/transfer/transfers.h"

namespace strata {

inline constexpr uint64_t kHashPieceBytes = 64 * 1024;

// Whether copy-out of `layout` can be hashed on one transfer thread: a single
// rank whose page record is its planes back to back (each padded to 4 KiB)
// and whose row segment is its row at offset 0. Pure.
bool CanHashCopyOut(const RecordLayout& layout);

struct HashedCopyOut {
  Status status;
  uint64_t bytes = 0;    // unpadded bytes copied
  uint64_t batches = 0;  // CopyBatch calls
  std::vector<uint64_t> page_sums;
  std::optional<uint64_t> row_sum;  // the job has a row
};

// Copies `job` (kDeviceToHost) out of `planes` like ThreadedTransfers does,
// zeroing padding, and hashes as it goes. Requires CanHashCopyOut(layout) and
// engine.copies_on_calling_thread(). On error the sums are empty.
HashedCopyOut CopyOutHashed(CopyEngine& engine, const RankGeometry& geometry,
                            const RankPlanes& planes, const RecordLayout& layout,
                            const TransferJob& job);

}  // namespace strata
