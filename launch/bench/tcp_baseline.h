// The baseline of the pool's TCP data channel in `strata bench pool`: the
// same bytes over one loopback TCP connection with nothing of the protocol
// (no frames, windows, checksums or arena), sent by a plain thread of its own
// (as the manager's data connections are) from one buffer and read into
// another on a thread scheduled like the instance's, in pieces of a slot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "launch/bench/store_bench_hand_work.h"
#include "store/base/mutex.h"
#include "store/base/status.h"
#include "wire/unique_fd.h"

namespace strata {

class RawTcp {
 public:
  // A loopback connection and buffers of `bytes` on each side.
  static Result<std::unique_ptr<RawTcp>> Open(uint64_t bytes, uint64_t piece_bytes);
  ~RawTcp();  // stops the sender
  RawTcp(const RawTcp&) = delete;
  RawTcp& operator=(const RawTcp&) = delete;

  // Moves `bytes` (at most what Open sized) across, read on a thread like
  // the workers' with `nice` (RunLikeWorkerThreads); timed from the sender's
  // start to the last byte read.
  Result<Sample> Transfer(uint64_t bytes, int nice);

 private:
  RawTcp(wire::UniqueFd sender, wire::UniqueFd receiver, uint64_t bytes, uint64_t piece_bytes);
  void SendLoop();

  wire::UniqueFd sender_;
  wire::UniqueFd receiver_;
  uint64_t piece_bytes_;
  std::vector<std::byte> source_;
  std::vector<std::byte> sink_;
  Mutex mu_;
  CondVar go_;
  uint64_t to_send_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace strata
