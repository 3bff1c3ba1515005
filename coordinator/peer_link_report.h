// What rank zero shows about one peer's record link (the metrics endpoint
// renders it as strata_peer_link_state / strata_peer_link_errors_total).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "store/base/ids.h"
#include "wire/link/link.h"

namespace strata {

struct PeerLinkReport {
  RankId peer;
  // "up", "draining", "closed" (after a clean close) or "failed".
  std::string state;
  // Errors on this link by reason: "timeout", "link_lost", "protocol",
  // "send_queue_full", "drain", and the link's rejected frames as
  // "bad_segment_table", "oversized", "malformed", "invalid_message".
  std::map<std::string, uint64_t> errors_by_reason;
  wire::LinkStats link;
  wire::LinkState link_state;  // phase, and why it closed
  uint64_t jobs_sent = 0;
  uint64_t jobs_done = 0;    // the rank reported success
  uint64_t jobs_failed = 0;  // the rank reported an error
};

}  // namespace strata
