// HashPipeline: an XXH3-64 stream fed on a thread of its own, so a copy and
// the hash of what it wrote overlap (docs/pool.md, "Copies through the
// arena"). The copying thread hands over each piece it has written (Update)
// and goes on copying the next while the pipeline's thread hashes it; Digest
// waits for the pieces handed over and returns their digest, in the order
// they were handed over.
//
// Contract: a piece's bytes must stay valid and unchanged by the caller
// until Digest returns (the caller writes them before handing them over and
// keeps them); Update, Reset and Digest come from one thread at a time.
// The pipeline's thread waits on a condition variable between pieces, so an
// idle pipeline costs nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <thread>

#include "store/base/mutex.h"
#include "store/record/checksum.h"

namespace strata::pool {

class HashPipeline {
 public:
  HashPipeline();
  // Hashes what was handed over, then joins the thread.
  ~HashPipeline();
  HashPipeline(const HashPipeline&) = delete;
  HashPipeline& operator=(const HashPipeline&) = delete;

  // Starts a new digest; waits for the pieces of the previous one first.
  void Reset();
  // Hands over the next piece (hashed after every piece handed over before).
  void Update(std::span<const std::byte> piece);
  // Waits until every piece handed over since Reset is hashed; their digest.
  uint64_t Digest();

 private:
  void Loop();
  // Waits until the queue is empty and no piece is being hashed.
  void Drain(MutexLock& lock) REQUIRES(mu_);

  Mutex mu_;
  CondVar work_;  // a piece was handed over, or stopping
  CondVar idle_;  // the queue drained
  std::deque<std::span<const std::byte>> pieces_ GUARDED_BY(mu_);
  bool hashing_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  // Written by the pipeline's thread while a piece is in hand, else by the
  // caller (Reset, Digest) once drained.
  Xxh3Stream hash_;
  std::thread thread_;
};

}  // namespace strata::pool
