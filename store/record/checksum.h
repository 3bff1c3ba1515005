// XXH3-64 checksums of record bytes (docs/formats.md, "Record files"): one per
// stored page record and one over the stored row segment. Uses libxxhash's
// x86 dispatch (SSE2/AVX2/AVX-512 chosen at run time), seed 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace strata {

uint64_t Xxh3(std::span<const std::byte> bytes);

// Xxh3 of bytes that are most likely not in any cache: landed by a device's
// DMA, or last written long ago. The same value, computed in 4 KiB steps with
// the next step's cache lines prefetched while the current one hashes. One
// core then streams cold memory faster than the hardware prefetcher alone
// lets XXH3 do: on the GPU machine's CPUs 8.8-9.7 GB/s against 7.7-8.7
// (docs/performance.md, "Disk-path CPU cost"). Hot bytes gain nothing.
uint64_t Xxh3Cold(std::span<const std::byte> bytes);

// XXH3-64 over bytes that arrive in pieces: equal to Xxh3 of their
// concatenation. Single-threaded; reusable after Reset().
class Xxh3Stream {
 public:
  Xxh3Stream();
  ~Xxh3Stream();
  Xxh3Stream(const Xxh3Stream&) = delete;
  Xxh3Stream& operator=(const Xxh3Stream&) = delete;
  Xxh3Stream(Xxh3Stream&&) noexcept;
  Xxh3Stream& operator=(Xxh3Stream&&) noexcept;

  void Reset();
  void Update(std::span<const std::byte> bytes);
  // Update for cold bytes, as Xxh3Cold: the same state afterwards.
  void UpdateCold(std::span<const std::byte> bytes);
  uint64_t Digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace strata
