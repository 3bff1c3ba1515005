// CopyEngine: how one rank's thread moves bytes between its device planes and
// host memory. HostCopyEngine uses memcpy over ordinary host buffers; the CUDA
// module's engine issues cuMemcpyBatchAsync on a low-priority stream.
#pragma once

#include <cstdint>
#include <span>

#include "store/base/status.h"
#include "store/transfer/transfers.h"

namespace strata {

// One contiguous copy. `device` is a device address (a host address for the
// host engine); `host` is slab memory.
struct CopyDescriptor {
  uint64_t device = 0;
  uint8_t* host = nullptr;
  uint64_t bytes = 0;
};

// Used only on its rank's transfer thread, from Start to Stop.
class CopyEngine {
 public:
  virtual ~CopyEngine() = default;
  // Called once on the rank thread before any copy (e.g. make a context
  // current, create the stream and event).
  virtual Status Start() = 0;
  // Copies a batch (at most kMaxBatchBytes and kMaxBatchEntries). An engine
  // may return once the batch is issued, leaving it in flight while the
  // caller builds the next (the descriptors need not outlive the call); it
  // returns an error only after every batch it issued has drained.
  virtual Status CopyBatch(TransferDirection direction, std::span<const CopyDescriptor> batch) = 0;
  // Waits until every batch issued so far has finished and returns the first
  // error not yet returned.
  virtual Status Drain() { return Status::Ok(); }
  // Batches issued and not yet known to have finished: the newest ones, so a
  // job whose last batch is older than these has landed (ThreadedTransfers
  // completes it then, without a Drain, while the next job's batches are
  // issued). An engine that finishes each batch within CopyBatch has none.
  virtual uint64_t batches_in_flight() const { return 0; }
  // True when every byte of a batch is in host memory (copy-out) or device
  // memory (restore) once CopyBatch returns, copied by the calling thread:
  // ThreadedTransfers may then hash copy-out bytes right after each copy,
  // while they are in this core's cache. False (the default): copies may
  // still be in flight, or were made by a DMA engine.
  virtual bool copies_on_calling_thread() const { return false; }
  // Called once on the rank thread after the last copy.
  virtual void Stop() = 0;
};

// Where a rank's planes live in device memory.
struct RankPlanes {
  std::vector<uint64_t> page_plane_base;  // one per page plane, geometry order
  uint64_t row_base = 0;
};

class HostCopyEngine final : public CopyEngine {
 public:
  Status Start() override { return Status::Ok(); }
  Status CopyBatch(TransferDirection direction, std::span<const CopyDescriptor> batch) override;
  bool copies_on_calling_thread() const override { return true; }
  void Stop() override {}
};

}  // namespace strata
