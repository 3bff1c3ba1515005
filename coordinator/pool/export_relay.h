// ExportRelay: the manager's side of exports (seed 2.15, "Exports"; docs/
// pool.md, "Exports"). A claim whose endpoint the pool lacks but another
// instance of the scope holds (PoolCatalog::BeginExport) waits here while
// the holder copies the record into a put of its own session; the holder's
// commit makes it an ordinary pooled record, and every claim waiting for it
// is then granted as any claim is (PoolCatalog::Claim). The holder's abort
// (its runtime refused, or its copy failed), its session's end, or the
// export's deadline (the claim's: the setup limit plus the bytes at 8 MiB/s,
// claim_rules.h) fail the waiting claims instead (the requesters fall back
// or recompute); the first two also forget the holding. A deadline leaves
// the put to the holder, which may still be writing its slots: its commit
// pools the record, its abort or its session's end frees them.
//
// Pure: no sockets or clock reads. The server sends what it returns: the
// ask to the holder, the answers to the requesters. Owned by the manager's
// thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <variant>
#include <vector>

#include "coordinator/pool/pool_catalog.h"
#include "coordinator/pool/pool_messages.h"

namespace strata::pool {

// A claim answer for a waiting requester, to send now.
struct RelayAnswer {
  SessionId requester;
  PoolClaim claim;  // the request it answers (the data channel notes the grant)
  PoolClaimAnswer answer;
};

struct ExportRelayCounts {
  uint64_t started = 0;  // exports asked of a holder
  uint64_t joined = 0;   // claims that waited for an export already asked
  uint64_t relayed = 0;  // waiting claims granted after the holder's commit
  uint64_t refused = 0;  // exports the holder aborted
  uint64_t failed = 0;   // the holder's commit refused, or the ask not sent
  uint64_t lost = 0;     // exports whose holder's session ended
  uint64_t expired = 0;  // past their deadline (claims failed, the put left to the holder)
  uint64_t waiting = 0;  // gauge: claims waiting now
};

class ExportRelay {
 public:
  explicit ExportRelay(uint64_t setup_limit_ms) : setup_limit_ms_(setup_limit_ms) {}

  // The export to ask of a holder: send `ask` to `holder`'s connection.
  struct Ask {
    SessionId holder;
    PoolExportAsk ask;
  };
  // What becomes of a claim: nullopt, not an export (answer it as usual);
  // an answer now (the export could not start, e.g. the arena is full); an
  // Ask to send (the claim waits); or nothing to send (it joined an export
  // already asked: std::monostate).
  using Begun = std::variant<std::monostate, PoolClaimAnswer, Ask>;
  std::optional<Begun> Begin(PoolCatalog& catalog, SessionId requester, const PoolClaim& claim,
                             uint64_t now_ms);
  // How a holder's put ended.
  enum class Ended : uint8_t {
    kCommitted,     // the record is pooled: grant the waiting claims
    kAborted,       // the holder refused or failed: forget its holding too
    kCommitFailed,  // the manager refused the commit (its parent went)
  };
  // After `holder`'s commit or abort of `put` was answered: the answers of
  // the claims waiting for it (none when it was no export).
  std::vector<RelayAnswer> PutEnded(PoolCatalog& catalog, SessionId holder, PutId put, Ended how,
                                    uint64_t now_ms);
  // After `session` ended (its puts aborted by the catalog): the answers of
  // the claims waiting on its exports; its own waiting claims are dropped.
  std::vector<RelayAnswer> SessionEnded(PoolCatalog& catalog, SessionId session);
  // Exports past their deadline: their claims fail. The export is kept,
  // without waiters and joined by no new claim, until the holder ends its
  // put (an abort still forgets the holding) or its session ends.
  std::vector<RelayAnswer> Expire(uint64_t now_ms);

  ExportRelayCounts counts() const;

 private:
  struct Waiter {
    SessionId requester;
    PoolClaim claim;
  };
  struct Export {
    SessionId holder;
    PrefixKey key;
    uint64_t deadline_ms = 0;
    std::vector<Waiter> waiters;
    bool expired = false;  // its waiters failed; it waits for the holder's end only
  };
  // Fails every waiter of `e` with `why`.
  static void Fail(const Export& e, const Status& why, std::vector<RelayAnswer>& out);

  uint64_t setup_limit_ms_;
  std::map<PutId, Export> exports_;
  ExportRelayCounts counts_;
};

}  // namespace strata::pool
