// RowChecksums: the row checksum of every record file in one record
// directory, as the transports over it learn them: the startup scan (and the
// rescan after rank zero's agreement), each store that writes a file, each
// unlink. A fetch or a truncate rebuilds the exact header its file carries,
// row checksum included, and any transport over the directory may read a
// file another wrote: with the direct transport a composite's demotion of a
// memory record writes through the staged side (host buffers) and its later
// restore into the GPU reads through the direct side. So every transport a
// LocalDisk makes shares its one RowChecksums.
//
// Thread: any (one mutex).
#pragma once

#include <cstdint>
#include <unordered_map>

#include "store/base/mutex.h"
#include "store/base/prefix_key.h"
#include "store/record/record_scan.h"

namespace strata {

class RowChecksums {
 public:
  // Remembers the row checksum of every record the scan kept.
  void Seed(const ScanReport& report) {
    MutexLock lock(mu_);
    for (const ScannedRecord& r : report.records) by_key_[r.key] = r.header.row_checksum;
  }
  void Set(const PrefixKey& key, uint64_t checksum) {
    MutexLock lock(mu_);
    by_key_[key] = checksum;
  }
  void Erase(const PrefixKey& key) {
    MutexLock lock(mu_);
    by_key_.erase(key);
  }
  // 0 for a record never seen (a header without a row carries 0).
  uint64_t Get(const PrefixKey& key) const {
    MutexLock lock(mu_);
    auto it = by_key_.find(key);
    return it == by_key_.end() ? 0 : it->second;
  }

 private:
  mutable Mutex mu_;
  std::unordered_map<PrefixKey, uint64_t> by_key_ GUARDED_BY(mu_);
};

}  // namespace strata
