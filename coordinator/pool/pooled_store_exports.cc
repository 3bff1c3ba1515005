// PooledStore's export and eviction hooks (seed 2.15, "Exports" and
// "Evictions"): the ExportLedger does the bookkeeping.
#include <spdlog/spdlog.h>

#include "coordinator/pool/pooled_store.h"

namespace strata::pool {

ExportId PooledStore::RequestExport(const ExportAsk& ask) { return exports_.Request(ask); }

Status PooledStore::FinishExport(ExportId export_id) { return exports_.Drained(export_id); }

void PooledStore::ExportPinned(ExportId export_id, const ExportDescription& description) {
  // A rejection already queued the end that hands the pin back.
  if (Status s = exports_.Pinned(export_id, description); !s.ok()) {
    spdlog::debug("prefix cache pool: export {} not taken: {}", export_id.value, s.ToString());
  }
}

void PooledStore::ExportRefused(ExportId export_id, ExportRefusal reason) {
  if (Status s = exports_.Refused(export_id, reason); !s.ok()) {
    spdlog::debug("prefix cache pool: refusal of export {} ({}): {}", export_id.value,
                  ExportRefusalName(reason), s.ToString());
  }
}

void PooledStore::Evicted(std::span<const EvictionNotice> notices) {
  stats_.eviction_notices += notices.size();
  // The tier Store offers to keeps the retry ledger (abandoned retries).
  HostStore* offered_to = tiers_.local != nullptr ? tiers_.local : tiers_.landing;
  if (offered_to != nullptr) offered_to->Evicted(notices);
}

void PooledStore::EvictionsLost() { ++stats_.evictions_lost; }

}  // namespace strata::pool
