// PutQueue: an instance's puts to its manager, never waiting on the model
// thread (seed 2.15, "Eviction below the instance"; docs/pool.md, "Puts").
//
// The end of the local chain hands over each record it evicts, with its held
// ancestors (parents first), as record images; the queue keeps them (parked)
// and moves them to the manager one record at a time, each step taken on an
// answer that has already arrived: the grant, the copy into the granted slots
// (hashed as it is copied), the commit. The parked image is the source that
// put_rules.h retains until the manager accepts: a refusal or a failed
// transfer keeps it and retries after the manager's progress (the epoch its
// answers carry) or a short back-off, as DecidePut says. While a refused
// chain waits for progress the queue asks for the epoch once per
// kPutBackoffMs (an empty lookup), since an instance learns it only from
// answers.
//
// What is discarded, and counted (`abandoned`: one per chain, its evicted
// record, since the ancestors it carries are still held locally): the oldest
// parked chains when a new one needs the byte budget ("queue": the queue is
// the end of the local chain), a chain larger than the whole budget or the
// manager's arena ("oversize"), a chain the manager refuses for good (any
// answer but busy) or kPutRefusalsBeforeAbandon times ("refused"), and
// everything when the instance stops sharing for good ("unshared").
//
// Thread: one thread at a time (the model worker).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/pool/pool_client.h"
#include "coordinator/pool/put_rules.h"

namespace strata::pool {

// One record of a parked chain: what its put names, and its image.
struct ParkedRecord {
  PrefixKey key;
  std::optional<PrefixKey> parent;  // none: a root record
  Digest128 bucket_digest;
  std::vector<std::byte> image;
};

struct PutQueueStats {
  uint64_t parked_records = 0;  // gauge: records waiting for the manager
  uint64_t parked_bytes = 0;    // gauge: their image bytes
  uint64_t accepted = 0;        // records committed, or already pooled
  uint64_t accepted_bytes = 0;
  uint64_t retries = 0;                      // chains sent again after a refusal or a failure
  uint64_t probes = 0;                       // empty lookups that asked for the progress epoch
  std::map<std::string, uint64_t> refusals;  // by status code name
  // Evicted records given up, by reason: queue, oversize, refused, unshared.
  std::map<std::string, uint64_t> abandoned;
  uint64_t copies_given_up = 0;  // demotions' records given up (the tier keeps them)
};

// The default byte budget of parked images.
inline constexpr uint64_t kPutQueueBytesDefault = uint64_t{256} << 20;
// Refusals (and failed transfers) of one chain before it is abandoned.
inline constexpr uint32_t kPutRefusalsBeforeAbandon = 8;

class PutQueue {
 public:
  explicit PutQueue(uint64_t budget_bytes) : budget_bytes_(budget_bytes) {}

  // Parks `chain` (parents first) behind the chains already parked. Older
  // chains not in flight are abandoned ("queue") until it fits the budget;
  // a chain larger than the whole budget is abandoned at once ("oversize").
  // A `copy` (a demotion's: the tier still holds every record) is not a
  // drop when given up: its records' outcomes, accepted or given up, are
  // reported by TakeCopyOutcomes instead of counting as abandoned.
  void Park(std::vector<ParkedRecord> chain, bool copy = false);
  // The keys of copied records accepted, and given up, since the last call.
  void TakeCopyOutcomes(std::vector<PrefixKey>& accepted, std::vector<PrefixKey>& given_up);
  // Moves the puts along on the answers `client` has already read (call
  // client.Pump() first), without waiting. An error is the connection's:
  // the caller drops it and calls Lost.
  Status Advance(PoolClient& client, uint64_t now_ms);
  // Gives up every parked chain (the instance stopped sharing for good).
  void AbandonAll(const std::string& reason);
  // The connection went: the record in flight is put again, from its grant,
  // on the next connection, and a refused chain retries there at once.
  void Lost();

  bool empty() const { return chains_.empty(); }
  // The request whose answer the queue waits for; nullopt when none is out.
  std::optional<uint64_t> awaited() const {
    return step_ == Step::kIdle ? std::nullopt : std::optional<uint64_t>(request_);
  }
  const PutQueueStats& stats() const { return stats_; }
  uint64_t abandoned_total() const;

 private:
  struct Chain {
    std::vector<ParkedRecord> records;
    size_t next = 0;     // the first record not yet accepted
    uint64_t bytes = 0;  // image bytes of records [next, end)
    bool gated = false;  // refused or failed: waits for `gate`
    RetryGate gate{};
    uint64_t next_probe_ms = 0;  // while gated: when to ask for the epoch again
    uint32_t refusals = 0;       // refusals and failed transfers so far
    uint32_t failures = 0;       // consecutive failed transfers (DecidePut)
    bool copy = false;           // a demotion's copy (Park)
  };
  enum class Step : uint8_t {
    kIdle,         // nothing out
    kAwaitGrant,   // the grant request of records[next] is out
    kAwaitCommit,  // its commit is out
    kAwaitAbort,   // its abort is out (the granted slots did not fit)
  };

  // Sends records[next]'s grant request, or waits for its gate.
  Status Start(PoolClient& client, Chain& c, uint64_t now_ms, bool& sent);
  // The grant, commit or abort answer `m` of the front chain.
  Status OnAnswer(PoolClient& client, Chain& c, PoolMessage& m, uint64_t now_ms);
  // records[next] is pooled: release its image; the chain leaves when done.
  void Accept(Chain& c);
  // records[next] was refused (`event`) with `why`: gate, or abandon.
  void Refuse(Chain& c, PutEvent event, const Status& why, uint64_t epoch, uint64_t now_ms);
  // Drops chain `i` (not in flight), counting its records under `reason`.
  void Abandon(size_t i, const std::string& reason);

  uint64_t budget_bytes_;
  std::deque<Chain> chains_;  // FIFO; only the front one has a request out
  Step step_ = Step::kIdle;
  uint64_t request_ = 0;  // the request awaited (step_ != kIdle)
  Status abort_why_;      // kAwaitAbort: why the grant was given back
  PutQueueStats stats_;
  std::vector<PrefixKey> copies_accepted_;
  std::vector<PrefixKey> copies_given_up_;
};

}  // namespace strata::pool
