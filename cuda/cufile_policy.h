// Strata's fixed cuFile policy (seed 2.6): its own cufile.json, installed
// through CUFILE_ENV_PATH_JSON before cuFileDriverOpen, so a host's
// /etc/cufile.json never decides whether serving bounces through host memory.
#pragma once

#include <cstdint>
#include <string>

#include "store/base/status.h"
#include "store/transfer/transfers.h"

namespace strata {

// The batch size Strata asks cuFile for (properties.max_batch_io_size): the
// most cuFile 1.x on CUDA 13 accepts (measured on the H200 host: cufile.json's
// 256 is not taken, and a 256-entry cuFileBatchIOSetUp fails with error 5022,
// "max allowed: 128"). A window with more entries (64 pages x 36 planes =
// 2,304) runs as several batches; CuFileDirectIo also cuts each batch to the
// driver's own reported limit.
inline constexpr uint32_t kCuFileMaxBatchEntries = 128;

// Whether cuFile may fall back to its host bounce buffers. Serving always
// refuses; kAllowedForTests exists so the transport's job logic can run on a
// host without nvidia-fs, and is never a configuration value.
enum class CompatMode : unsigned char { kRefused, kAllowedForTests };

struct CuFilePolicy {
  CompatMode compat = CompatMode::kRefused;
  // A 16 MiB entry (kMaxBatchBytes) is one I/O.
  uint64_t max_direct_io_kib = kMaxBatchBytes / 1024;
  uint32_t max_batch_io_entries = kCuFileMaxBatchEntries;
};

// The cufile.json text for `policy` (pure; deterministic key order).
std::string CuFilePolicyJson(const CuFilePolicy& policy);

// Writes CuFilePolicyJson to "<dir>/strata-cufile.json" (mode 0600, replacing
// any file there) and sets CUFILE_ENV_PATH_JSON to it. `dir` empty: a new
// private directory under $TMPDIR (or /tmp). Returns the file's path. Call
// before CuFileLibrary::DriverOpen, on one thread (setenv).
Result<std::string> InstallCuFilePolicy(const CuFilePolicy& policy, const std::string& dir = "");

}  // namespace strata
