// TransferPacer: a bound on the bytes per second one rank's transfer thread
// issues in one direction (ThreadedTransfersOptions::copy_out_bytes_per_s,
// restore_bytes_per_s). Copies share the GPU's memory with the model: even a
// plain contiguous DMA at the bus's full rate slows a bandwidth-bound
// (decode-like) model by 3-8% on the H200 (docs/performance.md, "Pacing
// the copies"), above the seed's 2%; a runtime that decodes can bound the
// offload's rate instead.
//
// Pure: the caller passes the time and sleeps until the returned one. A
// generic cell rate: each batch books bytes / rate of the bucket's time,
// and may start while the booked time is at most one burst ahead of now.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace strata {

class TransferPacer {
 public:
  using Clock = std::chrono::steady_clock;

  // `bytes_per_s` 0: unbounded (Admit returns `now`). `burst_bytes`: how
  // far ahead of now the booked bytes may reach when a batch starts (one
  // batch: the next one is issued while this one copies, so batches still
  // pipeline on the engine).
  TransferPacer(uint64_t bytes_per_s, uint64_t burst_bytes)
      : bytes_per_s_(bytes_per_s), burst_(Cost(burst_bytes)) {}

  bool bounded() const { return bytes_per_s_ != 0; }

  // When a batch of `bytes` may be issued, asked at `now`; books it.
  Clock::time_point Admit(uint64_t bytes, Clock::time_point now) {
    if (!bounded()) return now;
    booked_ = std::max(booked_, now);
    const Clock::time_point start = std::max(now, booked_ - burst_);
    booked_ += Cost(bytes);
    return start;
  }

 private:
  // bytes / rate in nanoseconds, exact to the nanosecond below.
  Clock::duration Cost(uint64_t bytes) const {
    if (bytes_per_s_ == 0) return Clock::duration::zero();
    const unsigned __int128 ns =
        static_cast<unsigned __int128>(bytes) * 1'000'000'000u / bytes_per_s_;
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::nanoseconds(static_cast<int64_t>(ns)));
  }

  uint64_t bytes_per_s_;
  Clock::duration burst_;
  Clock::time_point booked_{};  // the bucket's time: every booked byte's end
};

}  // namespace strata
