// The disk tier's effective limit when its filesystem holds less than the
// configured limit: at startup (disk_limit set above what the filesystem can
// hold) and at run time (a write failed with ENOSPC/EDQUOT, for instance
// because another process filled the disk). Pure arithmetic; the callers read
// the filesystem and log.
#pragma once

#include <cstdint>

namespace strata {

// Bytes kept free below what the filesystem can hold, so that writes under
// way and the next stores find room while eviction frees space: 1/16.
uint64_t SpaceMargin(uint64_t holdable_bytes);

// The effective limit for a filesystem that can hold `holdable_bytes` of
// records (the record bytes already on it plus its free bytes): that less the
// margin, and never above `limit_bytes`.
uint64_t LimitForFilesystem(uint64_t limit_bytes, uint64_t holdable_bytes);

}  // namespace strata
