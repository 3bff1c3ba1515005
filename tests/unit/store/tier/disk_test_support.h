// What the disk tier tests share: their opening step (a directory whose
// filesystem refuses O_DIRECT, as tmpfs does, skips the test; any other
// error fails it) and a local disk for the "test-model" namespace.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "store/base/status.h"
#include "store/record/fingerprint.h"
#include "store/tier/local_disk.h"

#define STRATA_OPEN_OR_SKIP(status_expr)                            \
  do {                                                              \
    const ::strata::Status open = (status_expr);                    \
    if (open.code() == ::strata::StatusCode::kFailedPrecondition && \
        open.message().find("O_DIRECT") != std::string::npos) {     \
      GTEST_SKIP() << open.message();                               \
    }                                                               \
    ASSERT_TRUE(open.ok()) << open.ToString();                      \
  } while (0)

namespace strata::testing {

// A LocalDisk under `dir` for `geometry`, namespace "test-model", with 64
// MiB of host headroom.
inline Result<std::unique_ptr<LocalDisk>> OpenTestDisk(const std::string& dir,
                                                       const CacheGeometry& geometry,
                                                       Durability durability) {
  LocalDiskOptions o;
  o.base_dir = dir;
  o.host_headroom_bytes = 64ull << 20;
  o.durability = durability;
  return LocalDisk::Open(geometry, ComputeNamespaceIdentity("test-model", StateMode::kOrdinary),
                         ComputeLayoutFingerprint(geometry), o);
}

}  // namespace strata::testing
