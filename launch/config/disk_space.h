// Free space of the filesystem that holds (or will hold) a directory: the
// input to ResolveDiskLimit's default (one tenth of it, seed 2.11).
#pragma once

#include <cstdint>
#include <string>

#include "store/base/status.h"

namespace strata {

// Bytes an unprivileged process may still write on the filesystem of
// `path`, or of its nearest existing ancestor when `path` does not exist yet
// (the record directory is created later). kIoError naming the path when
// statvfs fails.
Result<uint64_t> FilesystemFreeBytes(const std::string& path);

// Bytes the regular files under `path` occupy on disk (allocated blocks), 0
// when `path` does not exist. Entries that vanish or cannot be read while it
// walks are skipped: an estimate for LimitForFilesystem, never a budget.
uint64_t DirectoryDiskBytes(const std::string& path);

// The disk limit to use for a record directory: `limit_bytes`, or less when
// the filesystem holding `path` cannot hold that many record bytes (what it
// has free plus what the directory holds already, less a margin; see
// store/tier/space_limit.h). Logs one warning naming the filesystem, its free
// bytes and the limit used when it lowers the limit.
Result<uint64_t> LimitForRecordDirectory(const std::string& path, uint64_t limit_bytes);

}  // namespace strata
