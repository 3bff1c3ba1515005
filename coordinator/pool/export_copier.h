// ExportCopier: an instance's copies of pinned exports out of its planes
// (seed 2.15, "Exports": the exporting instance copies each window into a
// slot and writes it with its checksums). A pinned chain's pages and row
// are copied, by transfers of the copier's own over the planes (its own
// rank threads and streams, so the store's tiers never see its
// completions), into one staging region, registered with the planes'
// registrar and kept (grown for a larger export); the record image
// (pool_record_image.h) is then built from it for the manager's slots.
// One export at a time; PooledStore queues the rest.
//
// Thread: the store's owner.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "store/base/aligned_buffer.h"
#include "store/record/geometry.h"
#include "store/record/record_layout.h"
#include "store/tier/export_hooks.h"
#include "store/tier/record_handover.h"
#include "store/transfer/slab_pool.h"
#include "store/transfer/transfers.h"

namespace strata::pool {

// How long the destructor lets the copier's transfers drain.
inline constexpr std::chrono::milliseconds kExportCopierCloseBound{5'000};

class ExportCopier {
 public:
  // `registrar` (null with host planes) registers the staging for the
  // planes' copies.
  ExportCopier(std::unique_ptr<Transfers> transfers, const CacheGeometry& geometry,
               HostRegistrar* registrar);
  ~ExportCopier();
  ExportCopier(const ExportCopier&) = delete;
  ExportCopier& operator=(const ExportCopier&) = delete;

  // Starts copying `description` out (one export at a time: kBusy while
  // one is copying); `tag` names it in Poll.
  Status Start(uint64_t tag, const ExportDescription& description);
  bool busy() const { return copying_.has_value(); }

  struct Finished {
    uint64_t tag = 0;
    Status status;
  };
  // Submits what the transfers' queues take and reaps completions, never
  // waiting; the export once its last job came back.
  std::optional<Finished> Poll();

  // The record image of the finished copy (valid until the next Start),
  // as `key` under `parent` in bucket `bucket`.
  std::vector<std::byte> Image(const PrefixKey& key, const std::optional<PrefixKey>& parent,
                               const Digest128& bucket) const;

  const ExportRecordSizes& sizes() const { return sizes_; }
  // The owner's wake signal, raised when a copy's job comes back.
  void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) {
    transfers_->NotifyOnCompletion(std::move(signal));
  }

 private:
  struct Copying {
    uint64_t tag = 0;
    ExportDescription description;
    size_t next_page = 0;  // first page not yet submitted
    bool row_submitted = false;
    uint64_t jobs_out = 0;  // submitted, not yet back
    Status status;          // the first failure
  };
  // Makes the staging hold `bytes` (registered when there is a registrar).
  Status Reserve(uint64_t bytes);
  // Submits the next window of the copy; false when the queue is full or
  // nothing is left.
  bool SubmitNext();

  std::unique_ptr<Transfers> transfers_;
  ExportRecordSizes sizes_;
  HostRegistrar* registrar_;
  AlignedBuffer staging_;
  bool registered_ = false;
  uint64_t next_job_ = 1;
  std::optional<Copying> copying_;
  uint32_t pages_copied_ = 0;  // of the last finished copy
};

}  // namespace strata::pool
