// ClaimCopier: the copies of granted pool claims, on a thread of their own so
// that the owner's (model worker's) thread never copies a claim (docs/pool.md,
// "Claims"). A job is one granted chain: every record copied out of its slots
// into the job's buffers and checked against its checksum in the same pass
// (slot_copies.h), then handed back. The owner releases the claim only after
// the job came back, so the manager never reuses a slot a copy still reads.
//
// The job holds its way to the slots (a shared_ptr: the arena's mapping, or
// the claims' data connection), so a copy never reads unmapped memory even
// when the connection that granted it is gone; the slots may then be reused
// and the check fails the copy (or the data connection is gone with its
// session and the copy fails kUnavailable).
//
// Thread: Submit, TakeDone and NotifyOnProgress from the owner's thread; the
// copies on the copier's. Jobs run one at a time, in submission order.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "coordinator/pool/hash_pipeline.h"
#include "coordinator/pool/pool_catalog.h"
#include "coordinator/pool/slot_access.h"
#include "store/base/mutex.h"
#include "store/base/prefix_key.h"
#include "store/base/status.h"
#include "store/base/wake_signal.h"

namespace strata::pool {

struct ClaimCopyJob {
  uint64_t id = 0;                     // the owner's name for it
  std::shared_ptr<SlotAccess> slots;   // PoolClient::claim_slots()
  ClaimId claim;                       // as granted
  std::vector<ClaimedRecord> records;  // as granted, in chain order
  std::vector<PrefixKey> chain;        // what records[i] must be
  // In: buffers to reuse (resized as needed); out: records[i]'s checked
  // bytes, valid only when `status` is OK.
  std::vector<std::vector<std::byte>> buffers;
  Status status;  // out: the first failure (a record that is not chain[i], a checksum)
};

class ClaimCopier {
 public:
  ClaimCopier();
  // Finishes the job in hand, drops the queued ones and joins the thread.
  ~ClaimCopier();
  ClaimCopier(const ClaimCopier&) = delete;
  ClaimCopier& operator=(const ClaimCopier&) = delete;

  // Also raises `signal` whenever a job finished (null: none).
  void NotifyOnProgress(std::shared_ptr<WakeSignal> signal);
  void Submit(ClaimCopyJob job);
  // The jobs finished since the last call, in submission order.
  std::vector<ClaimCopyJob> TakeDone();
  // Jobs submitted and not yet taken back (queued, in hand, or done).
  size_t pending() const;
  // While held, queued jobs wait (the one in hand finishes): what a test
  // uses to keep a claim's copy out while something else happens.
  void SetHeld(bool held);

 private:
  void Loop();

  mutable Mutex mu_;
  CondVar work_;
  std::deque<ClaimCopyJob> queued_ GUARDED_BY(mu_);
  std::vector<ClaimCopyJob> done_ GUARDED_BY(mu_);
  size_t in_hand_ GUARDED_BY(mu_) = 0;
  bool held_ GUARDED_BY(mu_) = false;
  std::shared_ptr<WakeSignal> signal_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  HashPipeline hash_;  // the copier thread's
  std::thread thread_;
};

// Runs `job`'s copies on the calling thread (what the copier's thread does),
// hashed through `hash`.
void RunClaimCopy(ClaimCopyJob& job, HashPipeline& hash);

}  // namespace strata::pool
