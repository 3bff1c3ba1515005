// ExportLedger: the instance side's book of exports (seed 2.15, "Exports"):
// which exports it asked its runtime to pin, which are pinned and copying,
// and the StoreEvents that tell the runtime so. Pure: no threads, sockets or
// clock reads; PooledStore drives it, tests drive it by hand.
//
// An export is kAwaiting from Request until the runtime answers (Pinned or
// Refused), then kOpen until its copies drain (Drained) or, at once, if the
// store rejects the pinned chain (larger than the staging reserved, or record
// sizes unknown). Ending queues exactly one kExportEnded and forgets the
// export, so a second end finds nothing. An open export never drained keeps
// its pin: nothing here ends it behind the copies' back.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "store/base/status.h"
#include "store/tier/export_hooks.h"
#include "store/tier/host_store.h"

namespace strata::pool {

// What the relay asks to export (the manager's request, not built yet).
struct ExportAsk {
  PrefixKey key;
  uint64_t generation = 0;     // the generation the instance announced
  uint64_t start_page = 0;     // first chain page the requester lacks
  uint64_t staging_bytes = 0;  // staging the manager reserved for it
};

struct ExportLedgerCounts {
  uint64_t requested = 0;
  uint64_t pinned = 0;    // accepted pins (open exports, now or before)
  uint64_t rejected = 0;  // pins handed back at once
  std::array<uint64_t, kExportRefusalCount> refused{};  // by ExportRefusal
  uint64_t ended = 0;                                   // kExportEnded queued
  uint64_t stray_answers = 0;                           // answers naming no awaiting export
};

class ExportLedger {
 public:
  explicit ExportLedger(ExportRecordSizes sizes) : sizes_(sizes) {}

  // Opens an export and queues its kExportRequested; returns its id.
  ExportId Request(const ExportAsk& ask);
  // The runtime pinned `id`. Accepted: the export is open (OK). Rejected
  // (its bytes exceed the staging, or sizes are unknown): kExportEnded is
  // queued with the reason and that reason returned. A pin for an id never
  // requested or already answered-and-ended is handed back the same way
  // (kNotFound); one for an open export is a contract breach, ignored
  // (kFailedPrecondition), so the open export's pin is not released early.
  Status Pinned(ExportId id, const ExportDescription& description);
  // The runtime refused `id`; forgets it. kNotFound if it was not awaiting.
  Status Refused(ExportId id, ExportRefusal reason);
  // `id`'s copies drained: queues its kExportEnded (OK status). kNotFound if
  // it is not open (a second end, or never pinned).
  Status Drained(ExportId id);
  // Appends the queued events in order and clears them.
  void TakeEvents(std::vector<StoreEvent>& out);

  size_t awaiting() const;
  size_t open() const;
  // The pinned chain of an open export; null otherwise.
  const ExportDescription* description(ExportId id) const;
  const ExportLedgerCounts& counts() const { return counts_; }

 private:
  enum class Phase : unsigned char { kAwaiting, kOpen };
  struct Entry {
    ExportAsk ask;
    Phase phase = Phase::kAwaiting;
    ExportDescription description;
  };
  void QueueEnd(ExportId id, const PrefixKey& key, Status why);

  ExportRecordSizes sizes_;
  uint64_t next_id_ = 1;
  std::map<ExportId, Entry> exports_;
  std::vector<StoreEvent> events_;
  ExportLedgerCounts counts_;
};

}  // namespace strata::pool
