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

}  // namespace strata
