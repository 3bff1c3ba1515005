// ArenaCopier: the copies into and out of the pool's arena, on a thread of
// their own so that the owner's (model worker's) thread never copies a claim
// or a put (docs/pool.md, "Claims" and "Puts"). Jobs run one at a time, in
// submission order:
// - a claim job is one granted chain: every record copied out of its slots
//   into the job's buffers and checked against its checksum in the same
//   pass (slot_copies.h). The owner releases the claim only after the job
//   came back, so the manager never reuses a slot a copy still reads;
// - a put job is one granted record: its parked image copied into its slots,
//   hashed in the same pass: the checksum its commit carries. The owner
//   commits only after the job came back, and never ends the session that
//   granted the slots while the job may still write them (WaitIdle).
//
// A job holds the arena's mapping (a shared_ptr), and a put job its image,
// so a copy never touches unmapped or freed memory, whatever the owner
// dropped meanwhile.
//
// Thread: every call from the owner's thread; the copies on the copier's.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <variant>
#include <vector>

#include "coordinator/pool/arena.h"
#include "coordinator/pool/pool_catalog.h"
#include "store/base/mutex.h"
#include "store/base/prefix_key.h"
#include "store/base/status.h"
#include "store/base/wake_signal.h"

namespace strata::pool {

struct ClaimCopyJob {
  uint64_t id = 0;  // the owner's name for it
  std::shared_ptr<const Arena> arena;
  std::vector<ClaimedRecord> records;  // as granted, in chain order
  std::vector<PrefixKey> chain;        // what records[i] must be
  // In: buffers to reuse (resized as needed); out: records[i]'s checked
  // bytes, valid only when `status` is OK.
  std::vector<std::vector<std::byte>> buffers;
  Status status;  // out: the first failure (a record that is not chain[i], a checksum)
};

struct PutCopyJob {
  uint64_t id = 0;  // the owner's name for it
  std::shared_ptr<const Arena> arena;
  std::vector<SlotId> slots;                            // as granted
  std::shared_ptr<const std::vector<std::byte>> image;  // the record's image
  // Out: the checksum of the bytes written (the commit's), or kCorruption
  // when the slots do not fit the image (nothing written).
  Result<uint64_t> checksum = Status::Internal("not copied yet");
};

// Where a put queue's copies run (put_queue.h): the store's ArenaCopier, or
// a test's own thread.
class PutCopies {
 public:
  virtual ~PutCopies() = default;
  virtual void SubmitPut(PutCopyJob job) = 0;
  // The put jobs finished since the last call, in submission order.
  virtual std::vector<PutCopyJob> TakePutsDone() = 0;
};

class ArenaCopier final : public PutCopies {
 public:
  ArenaCopier();
  // Finishes the job in hand, drops the queued ones and joins the thread.
  ~ArenaCopier() override;
  ArenaCopier(const ArenaCopier&) = delete;
  ArenaCopier& operator=(const ArenaCopier&) = delete;

  // Also raises `signal` whenever a job finished (null: none).
  void NotifyOnProgress(std::shared_ptr<WakeSignal> signal);
  void Submit(ClaimCopyJob job);
  // The claim jobs finished since the last call, in submission order.
  std::vector<ClaimCopyJob> TakeDone();
  void SubmitPut(PutCopyJob job) override;
  std::vector<PutCopyJob> TakePutsDone() override;
  // Jobs submitted and not yet taken back (queued, in hand, or done).
  size_t pending() const;
  // Waits until no job is queued or in hand, at most `bound`; whether none is.
  bool WaitIdle(std::chrono::milliseconds bound);
  // While held, queued jobs wait (the one in hand finishes): what a test
  // uses to keep a copy out while something else happens.
  void SetHeld(bool held);

 private:
  using Job = std::variant<ClaimCopyJob, PutCopyJob>;
  void Enqueue(Job job);
  void Loop();

  mutable Mutex mu_;
  CondVar work_;  // a job queued, held_ cleared, or stopping_
  CondVar idle_;  // a job finished
  std::deque<Job> queued_ GUARDED_BY(mu_);
  std::vector<ClaimCopyJob> claims_done_ GUARDED_BY(mu_);
  std::vector<PutCopyJob> puts_done_ GUARDED_BY(mu_);
  size_t in_hand_ GUARDED_BY(mu_) = 0;
  bool held_ GUARDED_BY(mu_) = false;
  std::shared_ptr<WakeSignal> signal_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// Runs a job's copies on the calling thread (what the copier's thread does).
void RunClaimCopy(ClaimCopyJob& job);
void RunPutCopy(PutCopyJob& job);

}  // namespace strata::pool
