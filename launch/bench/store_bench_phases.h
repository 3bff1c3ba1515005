// The phases of `strata bench store` (launch/bench/bench_store.cc), in the
// order each round runs them, with the work each does that its baseline
// repeats by hand when the planes are host memory.
#pragma once

#include <cstddef>
#include <vector>

#include "launch/bench/store_bench_hand_work.h"

namespace strata {

// The phases of the run, each a store path and its baseline, per round.
enum Phase : size_t {
  kMemoryStore,
  kMemoryFetch,
  kDiskStore,
  kDiskFetch,
  kCompositeStore,
  kCompositeFetch,
  kCompositeDrain,
  kCompositeDiskFetch,
  kPhases
};
inline constexpr const char* kPhaseNames[kPhases] = {
    "memory_store",    "memory_fetch",    "disk_store",      "disk_fetch",
    "composite_store", "composite_fetch", "composite_drain", "composite_disk_fetch"};
// With host planes: the work each phase's store path does, by hand.
inline const std::vector<std::vector<HandStep>> kHandSteps = {
    {HandStep::kMemcpy},                                           // memory_store
    {HandStep::kMemcpy},                                           // memory_fetch
    {HandStep::kMemcpy, HandStep::kXxh3, HandStep::kDirectWrite},  // disk_store
    {HandStep::kDirectRead, HandStep::kXxh3, HandStep::kMemcpy},   // disk_fetch
    {HandStep::kMemcpy},                                           // composite_store
    {HandStep::kMemcpy},                                           // composite_fetch
    {HandStep::kXxh3, HandStep::kDirectWrite},                     // composite_drain
    {HandStep::kDirectRead, HandStep::kXxh3, HandStep::kMemcpy}};  // composite_disk_fetch
inline bool IsDiskPhase(size_t p) {
  return p == kDiskStore || p >= kCompositeDrain || p == kDiskFetch;
}

}  // namespace strata
