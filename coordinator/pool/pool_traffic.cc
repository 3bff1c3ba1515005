#include "coordinator/pool/pool_traffic.h"

namespace strata::pool {

namespace {

void Refused(PoolTraffic& t, const char* op, const Status& s) {
  ++t.refusals[{op, ReasonLabel(s)}];
}

}  // namespace

std::string ReasonLabel(const Status& status) {
  std::string name(StatusCodeName(status.code()));
  for (char& ch : name) {
    if (ch == ' ') ch = '_';
  }
  return name;
}

void CountExchange(PoolTraffic& t, const PoolMessage& request, const PoolMessage& answer) {
  if (std::holds_alternative<PoolLookup>(request)) {
    const auto* a = std::get_if<PoolLookupAnswer>(&answer);
    if (a == nullptr) return;
    ++t.lookups;
    if (!a->status.ok()) {
      Refused(t, "lookup", a->status);
    } else if (!a->chain.empty()) {
      ++t.lookup_hits;
    }
  } else if (const auto* put = std::get_if<PoolPut>(&request)) {
    const auto* a = std::get_if<PoolPutAnswer>(&answer);
    if (a == nullptr) return;
    if (!a->status.ok()) {
      Refused(t, "put", a->status);
      return;
    }
    ++t.puts_granted;
    t.put_bytes += put->put.bytes;
  } else if (std::holds_alternative<PoolCommit>(request) ||
             std::holds_alternative<PoolAbort>(request) ||
             std::holds_alternative<PoolRelease>(request)) {
    const auto* a = std::get_if<PoolDone>(&answer);
    if (a == nullptr) return;
    const char* op = std::holds_alternative<PoolCommit>(request)  ? "commit"
                     : std::holds_alternative<PoolAbort>(request) ? "abort"
                                                                  : "release";
    if (!a->status.ok()) {
      Refused(t, op, a->status);
    } else if (std::holds_alternative<PoolCommit>(request)) {
      ++t.puts_committed;
    } else if (std::holds_alternative<PoolAbort>(request)) {
      ++t.puts_aborted;
    } else {
      ++t.releases;
    }
  } else if (std::holds_alternative<PoolClaim>(request)) {
    const auto* a = std::get_if<PoolClaimAnswer>(&answer);
    if (a == nullptr) return;
    if (!a->status.ok()) {
      Refused(t, "claim", a->status);
      return;
    }
    ++t.claims;
    for (const ClaimedRecord& r : a->records) {
      ++t.claimed_records;
      t.claimed_bytes += r.bytes;
    }
  }
}

}  // namespace strata::pool
