// The baselines of `strata bench store` with host planes: the work a store
// does, done by hand, one step after another, each step on one thread
// scheduled like the store's worker threads:
//
//   memcpy          the bytes between planes and host memory (transfers)
//   XXH3            the checksums a record file carries (docs/formats.md)
//   O_DIRECT write  a plain sequential write of the record files' bytes
//   O_DIRECT read   the same, read back
//
// Composing the steps (Serial, HandWorkName) is pure arithmetic, unit-tested
// in tests/unit/launch/bench/; HandWork runs them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "store/base/aligned_buffer.h"
#include "store/base/status.h"

namespace strata {

// One measurement: bytes moved over a time, with per-record latencies.
struct Sample {
  uint64_t bytes = 0;
  double seconds = 0;
  double cpu_seconds = 0;
  std::vector<double> latency_ms;
  double gbps() const { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }
};

enum class HandStep : unsigned char { kMemcpy, kXxh3, kDirectWrite, kDirectRead };

// "memcpy", "XXH3", "O_DIRECT write", "O_DIRECT read".
const char* HandStepName(HandStep step);
// The step names joined by " + ", in order: what a phase's baseline did.
std::string HandWorkName(std::span<const HandStep> steps);

// The steps done one after another, as one baseline of `bytes` (the bytes
// the store's phase moved, so that the ratio compares times): seconds and
// CPU seconds are the parts' sums; no per-record latencies.
Sample Serial(uint64_t bytes, std::span<const Sample> parts);

// Runs the memory steps over `bytes` in pieces of `piece_bytes` (a page
// record: the store copies and checksums piece by piece), cycling through
// buffers of `window_bytes` so that caches hold no more than the store's
// restore windows.
class HandWork {
 public:
  HandWork(uint64_t window_bytes, uint64_t piece_bytes, int nice);

  Sample Memcpy(uint64_t bytes);
  Sample Xxh3(uint64_t bytes);

 private:
  uint64_t piece_bytes_;
  int nice_;
  AlignedBuffer src_, dst_;
  uint64_t digests_ = 0;  // every checksum folded in: the work is observable
};

}  // namespace strata
