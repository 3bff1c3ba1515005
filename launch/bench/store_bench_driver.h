// Drives any HostStore the way a model thread would, for benchmarks: publish
// a set of checkpoints and wait for every kStored, then look each one up and
// restore it (a bounded number in flight, into distinct ids) and wait for
// every kFetched, timing both and each record's latency.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "store/tier/host_store.h"
#include "store/transfer/device_planes.h"

namespace strata {

// One benchmark record: its token history and the checkpoint that publishes
// it from device pages [0, pages) and row slot 0.
struct BenchRecord {
  std::vector<Token> tokens;
  PublishedCheckpoint checkpoint;
};

// `count` root records of `pages` pages each, with distinct histories.
std::vector<BenchRecord> MakeBenchRecords(uint32_t count, uint32_t pages, uint32_t page_tokens);

struct DriveResult {
  double seconds = 0;
  double cpu_seconds = 0;
  std::vector<double> latency_ms;  // per record
};

// Publishes every record; done when each has its kStored event.
Result<DriveResult> StoreAll(HostStore& store, const std::vector<BenchRecord>& records);

// Called with a restore window's slot when a restore into it completed,
// before the window is reused; an error ends FetchAll with it.
using RestoredHook = std::function<Status(uint32_t slot)>;

// Restores every record with at most `depth` in flight; restore j of a
// window lands in page ids [(1 + j) * pages, ...) and row slot 1 + j. The
// hook's time counts in the result's seconds: timed runs pass none.
Result<DriveResult> FetchAll(HostStore& store, const std::vector<BenchRecord>& records,
                             uint32_t depth, const RestoredHook& on_restored = {});

// Zeroes restore window `slot` (its pages and row), so that a check after a
// restore into it sees only what that restore wrote.
Status ClearWindow(DevicePlanes& planes, uint32_t pages, uint32_t slot);

// Compares the pages and row restored into window `slot` with the published
// ones (device pages [0, pages), row slot 0). kCorruption names the first
// difference.
Status CheckRestored(DevicePlanes& planes, uint32_t pages, uint32_t slot);

}  // namespace strata
