// DiskRig: one process's disk store over host planes (LocalDisk, a staged
// transport, DiskStore) in a scratch directory, for the disk store tests.
// OPEN_RIG skips the test when the filesystem refuses O_DIRECT (tmpfs).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "store/tier/disk_store.h"
#include "store/tier/local_disk.h"
#include "store/transfer/host_planes.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata::testing {

// One process's disk store over host planes: LocalDisk, Staged, DiskStore.
class DiskRig {
 public:
  // `fs`: the file system under the record directory (null: the real one).
  DiskRig(const std::string& base, HostPlanes& planes, uint64_t limit, Status* open_status,
          FileSystem* fs = nullptr) {
    const CacheGeometry& g = planes.geometry();
    identity_ = ComputeNamespaceIdentity("test-model", StateMode::kOrdinary);
    fingerprint_ = ComputeLayoutFingerprint(g);
    LocalDiskOptions o;
    o.base_dir = base;
    o.host_headroom_bytes = 64ull << 20;
    o.file_system = fs;
    Result<std::unique_ptr<LocalDisk>> disk = LocalDisk::Open(g, identity_, fingerprint_, o);
    if (!disk.ok()) {
      *open_status = disk.status();
      return;
    }
    disk_ = std::move(*disk);
    auto transport = *disk_->MakeTransport(*MakeHostTransfers(planes));
    Result<std::unique_ptr<DiskStore>> store = DiskStore::Open(
        g, std::move(transport), disk_->scan().records,
        {.disk_limit_bytes = limit, .free_bytes = [d = disk_.get()] { return d->FreeBytes(); }});
    *open_status = store.status();
    if (store.ok()) store_ = std::move(*store);
  }
  ~DiskRig() {
    if (store_) {
      EXPECT_TRUE(store_->Close().ok());
    }
    store_.reset();
  }
  DiskStore* store() { return store_.get(); }
  LocalDisk& disk() { return *disk_; }

 private:
  NamespaceIdentity identity_{};
  LayoutFingerprint fingerprint_{};
  std::unique_ptr<LocalDisk> disk_;
  std::unique_ptr<DiskStore> store_;
};

// OPEN_RIG(rig, base, planes, limit[, FileSystem*])
#define OPEN_RIG(rig, base, planes, limit, ...)                                                  \
  ::strata::Status rig##_status;                                                                 \
  ::strata::testing::DiskRig rig(base, planes, limit, &rig##_status __VA_OPT__(, ) __VA_ARGS__); \
  if (rig##_status.code() == ::strata::StatusCode::kFailedPrecondition &&                        \
      rig##_status.message().find("O_DIRECT") != std::string::npos) {                            \
    GTEST_SKIP() << rig##_status.message();                                                      \
  }                                                                                              \
  ASSERT_TRUE(rig##_status.ok()) << rig##_status.ToString()

}  // namespace strata::testing
