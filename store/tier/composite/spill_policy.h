// SpillPolicy: the composite store's choice of which memory-only (parked)
// records to write to disk, in what order and when (seed 2.4, 2.5). Pure:
// no threads, I/O or clock reads; the composite passes in its parked records,
// its slot counts and the time, and acts on the answers.
//
//   Write-behind  when free + clean + being-written slots fall below twice
//                 the intake, write the coldest parked records that are due,
//                 each after its parked ancestors (a record's topmost parked
//                 ancestor is written first). That bounds what is written
//                 ahead of need to 2 x intake plus one largest record.
//   Retry         a refused or out-of-space write is retried after retry_ms.
//   Drain         at Close, most recent endpoints first, each after its
//                 parked ancestors; a bounded number of writes in flight; no
//                 new write after the drain's write limit; give up after a
//                 stall with no completion.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "store/base/prefix_key.h"

namespace strata {

// A parked record as the policy sees it.
struct ParkedRecord {
  PrefixKey key{};
  std::optional<PrefixKey> parked_parent{};  // its parent, when that is parked too
  uint64_t retry_at_ms = 0;                  // no write of it before this
};

// The memory tier's slots as write-behind counts them.
struct SlotRoom {
  uint64_t free = 0;     // free in the pool
  uint64_t clean = 0;    // held by durable residents
  uint64_t writing = 0;  // held by residents being written (clean once committed)
  uint64_t intake = 0;   // the pool's intake slots
};

struct SpillPolicyOptions {
  uint64_t retry_ms = 200;            // backoff after a refused or out-of-space write
  size_t drain_writes_in_flight = 8;  // writes a drain keeps in flight at once
  std::chrono::milliseconds drain_stall_bound{60'000};  // a drain with no completion gives up
};

// What a shutdown drain does next.
enum class DrainAction : unsigned char {
  kStart,   // start the next write in the drain order
  kWait,    // wait for a completion
  kFinish,  // nothing in flight and nothing more to start
  kGiveUp,  // no completion within the stall bound
};

struct DrainState {
  std::chrono::steady_clock::time_point now{};
  std::chrono::steady_clock::time_point write_until{};    // no new write from then on
  std::chrono::steady_clock::time_point last_progress{};  // the last completion (or the start)
  size_t writes_in_flight = 0;
  size_t left_to_start = 0;  // records of the drain order not yet started
};

// Whether a write the composite tried started.
enum class SpillStart : unsigned char { kStarted, kRefused };

class SpillPolicy;

// One round of write-behind: the composite asks Next with its slots as they
// are now, tries the write it names, and reports how that went.
class WriteBehindRound {
 public:
  // The next record to write, or none: the room reached the target or no
  // due record is left.
  std::optional<PrefixKey> Next(const SlotRoom& room);
  // What became of the write Next named: started (no longer parked) or
  // refused (parked, due again after the retry backoff).
  void Report(const PrefixKey& key, SpillStart start);

 private:
  friend class SpillPolicy;
  struct Model {
    std::optional<PrefixKey> parked_parent;
    uint64_t retry_at_ms = 0;
    bool started = false;
  };
  WriteBehindRound(const SpillPolicy& policy, uint64_t now_ms) : policy_(policy), now_ms_(now_ms) {}
  PrefixKey RootOf(const PrefixKey& key) const;

  const SpillPolicy& policy_;
  uint64_t now_ms_;
  std::unordered_map<PrefixKey, Model> parked_;
  std::vector<PrefixKey> candidates_;  // due parked records, coldest first
  size_t next_ = 0;
};

class SpillPolicy {
 public:
  explicit SpillPolicy(SpillPolicyOptions options = {}) : options_(options) {}

  // Free + clean + writing slots below twice the intake.
  bool WantsWriteBehind(const SlotRoom& room) const;
  // A round over `coldest_first` (every parked record, coldest first) at `now_ms`.
  WriteBehindRound StartRound(const std::vector<ParkedRecord>& coldest_first,
                              uint64_t now_ms) const;
  // When a write refused at `now_ms` is due again.
  uint64_t RetryAt(uint64_t now_ms) const { return now_ms + options_.retry_ms; }
  // The drain's write order over `most_recent_first` (every parked record,
  // most recently used first): each record after its parked ancestors, once.
  std::vector<PrefixKey> DrainOrder(const std::vector<ParkedRecord>& most_recent_first) const;
  DrainAction NextDrainAction(const DrainState& state) const;

 private:
  SpillPolicyOptions options_;
};

}  // namespace strata
