// VerifyRecordFile: reads one record file back through FileSystem and checks
// every stored page record against the checksum segment and the row segment
// (when the file holds it) against the header's row checksum. Memory is one
// caller-owned scratch buffer plus 4 KiB, whatever sizes the header claims,
// so a crafted or sparse file cannot make the check allocate more. Used by
// `strata fsck`; the serving path verifies on the disk thread instead
// (store/disk/disk_read_run.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "store/base/status.h"
#include "store/io/file_system.h"
#include "store/record/record_header.h"

namespace strata {

// The scratch size `strata fsck` uses.
inline constexpr uint64_t kVerifyScratchBytes = uint64_t{1} << 20;

// `fd` is open for reading (any mode); `header` and `extents` are the file's,
// already decoded; `row_present` says whether to check the row segment.
// Returns OK, kCorruption naming the first bad page ("page 3 of 10 failed its
// checksum ...") or the row, or the read error (kIoError, ...) unchanged.
// Reads stop at the first bad page. `scratch` must not be empty.
Status VerifyRecordFile(FileSystem& fs, int fd, const RecordHeader& header,
                        const RecordExtents& extents, bool row_present,
                        std::span<std::byte> scratch);

}  // namespace strata
