// What the manager counts of its traffic, for its /metrics and /status (the
// `strata_pool_*` families, docs/pool.md). Pure: counted from each request
// and the answer the dispatch returned for it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "coordinator/pool/export_relay.h"
#include "coordinator/pool/pool_catalog.h"
#include "coordinator/pool/pool_messages.h"

namespace strata::pool {

struct PoolTraffic {
  uint64_t lookups = 0;
  uint64_t lookup_hits = 0;     // answered with a chain
  uint64_t puts_granted = 0;    // slots handed out
  uint64_t put_bytes = 0;       // bytes of granted puts
  uint64_t puts_committed = 0;  // records that became claimable
  uint64_t puts_aborted = 0;
  uint64_t claims = 0;  // claims granted
  uint64_t claimed_records = 0;
  uint64_t claimed_bytes = 0;
  uint64_t releases = 0;
  // Refused requests by operation and status: {"put", "busy"} -> count.
  std::map<std::pair<std::string, std::string>, uint64_t> refusals;
  // Hellos rejected, by reason: "job_secret" (a TCP Hello without the
  // proof), "refused" (version, scope or geometry: AcceptHello's reason).
  std::map<std::string, uint64_t> hellos_rejected;
};

// A status code as a metric label: its name in snake case ("not_found").
std::string ReasonLabel(const Status& status);

// Counts one exchange. A request whose answer is not its kind (the dispatch
// closes the link) counts nothing.
void CountExchange(PoolTraffic& traffic, const PoolMessage& request, const PoolMessage& answer);

// The data channel's traffic (PoolDataServer), counted on its connections' threads.
struct PoolDataCounts {
  uint64_t connections = 0;      // data connections accepted
  uint64_t windows_written = 0;  // SlotWrites that landed
  uint64_t windows_read = 0;     // SlotReads answered with their bytes
  uint64_t bytes_written = 0;
  uint64_t bytes_read = 0;
  uint64_t windows_refused = 0;      // either kind, answered with an error
  uint64_t connections_dropped = 0;  // ended by a bad frame or a stalled window
};

// The manager's state for its endpoints, copied out by its thread.
struct PoolManagerStats {
  PoolTraffic traffic;
  CatalogCounts catalog;
  uint64_t slots_total = 0;
  uint64_t slots_free = 0;
  uint64_t slots_retired_held = 0;  // removed records' slots a claim still holds
  uint64_t connections = 0;
  PoolDataCounts data;  // the data channel's (PoolServer::Stats adds them)
  ExportRelayCounts exports;
};

}  // namespace strata::pool
