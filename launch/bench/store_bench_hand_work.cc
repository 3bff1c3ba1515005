#include "launch/bench/store_bench_hand_work.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "launch/bench/bench_baseline.h"
#include "store/record/checksum.h"

namespace strata {

const char* HandStepName(HandStep step) {
  switch (step) {
    case HandStep::kMemcpy: return "memcpy";
    case HandStep::kXxh3: return "XXH3";
    case HandStep::kDirectWrite: return "O_DIRECT write";
    case HandStep::kDirectRead: return "O_DIRECT read";
  }
  return "?";
}

std::string HandWorkName(std::span<const HandStep> steps) {
  std::string out;
  for (HandStep s : steps) {
    if (!out.empty()) out += " + ";
    out += HandStepName(s);
  }
  return out;
}

Sample Serial(uint64_t bytes, std::span<const Sample> parts) {
  Sample out;
  out.bytes = bytes;
  for (const Sample& p : parts) {
    out.seconds += p.seconds;
    out.cpu_seconds += p.cpu_seconds;
  }
  return out;
}

namespace {

// Runs `step(offset, n)` over `bytes` in pieces of at most `piece` bytes
// whose offsets cycle through [0, window), timed on a worker-like thread.
template <typename Step>
Sample Timed(uint64_t bytes, uint64_t piece, uint64_t window, int nice, Step step) {
  Sample s;
  s.bytes = bytes;
  RunLikeWorkerThreads(nice, [&] {
    const double cpu_before = ProcessCpuSeconds();
    const auto start = std::chrono::steady_clock::now();
    uint64_t offset = 0;
    for (uint64_t done = 0; done < bytes;) {
      if (offset + piece > window) offset = 0;
      const uint64_t n = std::min(piece, bytes - done);
      step(offset, n);
      offset += n;
      done += n;
    }
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    s.cpu_seconds = ProcessCpuSeconds() - cpu_before;
  });
  return s;
}

}  // namespace

HandWork::HandWork(uint64_t window_bytes, uint64_t piece_bytes, int nice)
    : piece_bytes_(std::min(piece_bytes, AlignUp(window_bytes))),
      nice_(nice),
      src_(AlignUp(window_bytes)),
      dst_(AlignUp(window_bytes)) {
  std::memset(src_.data(), 1, src_.size());
  std::memset(dst_.data(), 0, dst_.size());
}

Sample HandWork::Memcpy(uint64_t bytes) {
  return Timed(bytes, piece_bytes_, src_.size(), nice_, [&](uint64_t offset, uint64_t n) {
    std::memcpy(dst_.data() + offset, src_.data() + offset, n);
  });
}

Sample HandWork::Xxh3(uint64_t bytes) {
  return Timed(bytes, piece_bytes_, src_.size(), nice_, [&](uint64_t offset, uint64_t n) {
    digests_ ^= strata::Xxh3(std::span<const std::byte>(src_.data() + offset, n));
  });
}

}  // namespace strata
