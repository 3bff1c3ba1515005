// SpillPolicy driven by hand: tables of slot counts, parked records and times
// in, the records to write (and the drain's next step) out.
#include "store/tier/composite/spill_policy.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using namespace std::chrono_literals;
using testing::KeyOf;

// Record `n` is the key of n pages' worth of tokens; its parked parent, if
// any, is record `parent` (0: none).
ParkedRecord Parked(uint64_t n, uint64_t parent = 0, uint64_t retry_at_ms = 0) {
  ParkedRecord r{.key = KeyOf(n), .retry_at_ms = retry_at_ms};
  if (parent != 0) r.parked_parent = KeyOf(parent);
  return r;
}

std::vector<uint64_t> Names(const std::vector<PrefixKey>& keys) {
  std::vector<uint64_t> out;
  for (const PrefixKey& k : keys) out.push_back(k.consumed);
  return out;
}

TEST(SpillPolicyTest, WriteBehindStartsBelowTwiceTheIntake) {
  struct Row {
    SlotRoom room;
    bool wanted;
  };
  const Row rows[] = {
      {{.free = 0, .clean = 0, .writing = 0, .intake = 16}, true},
      {{.free = 31, .clean = 0, .writing = 0, .intake = 16}, true},
      {{.free = 32, .clean = 0, .writing = 0, .intake = 16}, false},
      {{.free = 10, .clean = 11, .writing = 11, .intake = 16}, false},  // clean and writing count
      {{.free = 10, .clean = 11, .writing = 10, .intake = 16}, true},
      {{.free = 0, .clean = 0, .writing = 0, .intake = 0}, false},
  };
  SpillPolicy policy;
  for (const Row& r : rows) {
    EXPECT_EQ(policy.WantsWriteBehind(r.room), r.wanted)
        << r.room.free << "+" << r.room.clean << "+" << r.room.writing << " vs " << r.room.intake;
  }
}

// Runs one round where every write starts and adds `slots_each` to the
// writing slots; returns what it wrote, in order.
std::vector<uint64_t> RunRound(const SpillPolicy& policy, const std::vector<ParkedRecord>& coldest,
                               uint64_t now_ms, SlotRoom room, uint64_t slots_each,
                               const std::vector<uint64_t>& refuse = {}) {
  WriteBehindRound round = policy.StartRound(coldest, now_ms);
  std::vector<uint64_t> written;
  while (std::optional<PrefixKey> k = round.Next(room)) {
    const bool refused = std::find(refuse.begin(), refuse.end(), k->consumed) != refuse.end();
    round.Report(*k, refused ? SpillStart::kRefused : SpillStart::kStarted);
    if (refused) continue;
    written.push_back(k->consumed);
    room.writing += slots_each;
  }
  return written;
}

TEST(SpillPolicyTest, WriteBehindWritesColdestDueRecordsAncestorsFirstUntilTheTarget) {
  struct Row {
    std::string name;
    std::vector<ParkedRecord> coldest_first;
    uint64_t now_ms;
    uint64_t free_slots;  // intake 16: the target is 32
    std::vector<uint64_t> refuse;
    std::vector<uint64_t> written;
  };
  const Row rows[] = {
      {"coldest first, until the target", {Parked(1), Parked(2), Parked(3)}, 0, 20, {}, {1, 2}},
      {"at the target: nothing", {Parked(1), Parked(2)}, 0, 32, {}, {}},
      {"all when far below", {Parked(1), Parked(2), Parked(3)}, 0, 0, {}, {1, 2, 3}},
      // A record waits for the next round behind the ancestor written for it.
      {"a parked parent goes first", {Parked(2, 1), Parked(1)}, 0, 0, {}, {1}},
      {"the topmost parked ancestor first",
       {Parked(3, 2), Parked(2, 1), Parked(1)},
       0,
       0,
       {},
       {1, 2}},
      {"not yet due: skipped", {Parked(1, 0, 500), Parked(2)}, 100, 0, {}, {2}},
      {"due: written", {Parked(1, 0, 100), Parked(2)}, 100, 0, {}, {1, 2}},
      {"an ancestor not due holds its descendants",
       {Parked(2, 1), Parked(1, 0, 500)},
       100,
       0,
       {},
       {}},
      {"a refused ancestor holds its descendants",
       {Parked(2, 1), Parked(3), Parked(1)},
       0,
       0,
       {1},
       {3}},
      {"a refused record does not stop the others", {Parked(1), Parked(2)}, 0, 0, {1}, {2}},
  };
  SpillPolicy policy({.retry_ms = 200});
  for (const Row& r : rows) {
    EXPECT_EQ(RunRound(policy, r.coldest_first, r.now_ms, {.free = r.free_slots, .intake = 16},
                       /*slots_each=*/6, r.refuse),
              r.written)
        << r.name;
  }
}

TEST(SpillPolicyTest, RefusedWritesAreDueAfterTheBackoff) {
  SpillPolicy policy({.retry_ms = 250});
  EXPECT_EQ(policy.RetryAt(1'000), 1'250u);
  EXPECT_EQ(SpillPolicy().RetryAt(0), 200u);  // the documented default
}

TEST(SpillPolicyTest, DrainWritesMostRecentFirstEachAfterItsParkedAncestors) {
  struct Row {
    std::string name;
    std::vector<ParkedRecord> most_recent_first;
    std::vector<uint64_t> order;
  };
  const Row rows[] = {
      {"none", {}, {}},
      {"recency order", {Parked(3), Parked(1), Parked(2)}, {3, 1, 2}},
      {"ancestors first", {Parked(3, 2), Parked(2, 1), Parked(1)}, {1, 2, 3}},
      {"each once", {Parked(3, 1), Parked(2, 1), Parked(1)}, {1, 3, 2}},
      {"a parent not parked is no ancestor here", {Parked(5, 4)}, {5}},
  };
  SpillPolicy policy;
  for (const Row& r : rows)
    EXPECT_EQ(Names(policy.DrainOrder(r.most_recent_first)), r.order) << r.name;
}

TEST(SpillPolicyTest, DrainStartsWaitsFinishesOrGivesUp) {
  const auto t0 = std::chrono::steady_clock::time_point(100s);
  struct Row {
    std::string name;
    DrainState state;
    DrainAction action;
  };
  const Row rows[] = {
      {"start while under the limits",
       {.now = t0,
        .write_until = t0 + 1s,
        .last_progress = t0,
        .writes_in_flight = 7,
        .left_to_start = 1},
       DrainAction::kStart},
      {"wait at the in-flight bound",
       {.now = t0,
        .write_until = t0 + 1s,
        .last_progress = t0,
        .writes_in_flight = 8,
        .left_to_start = 1},
       DrainAction::kWait},
      {"no new write after the write limit",
       {.now = t0 + 1s,
        .write_until = t0 + 1s,
        .last_progress = t0 + 1s,
        .writes_in_flight = 2,
        .left_to_start = 5},
       DrainAction::kWait},
      {"finished: nothing in flight, nothing left",
       {.now = t0,
        .write_until = t0 + 1s,
        .last_progress = t0,
        .writes_in_flight = 0,
        .left_to_start = 0},
       DrainAction::kFinish},
      {"finished: past the write limit, nothing in flight",
       {.now = t0 + 2s,
        .write_until = t0 + 1s,
        .last_progress = t0,
        .writes_in_flight = 0,
        .left_to_start = 5},
       DrainAction::kFinish},
      {"a stall past the bound gives up",
       {.now = t0 + 61s,
        .write_until = t0 + 100s,
        .last_progress = t0,
        .writes_in_flight = 8,
        .left_to_start = 3},
       DrainAction::kGiveUp},
      {"at the stall bound: still waits",
       {.now = t0 + 60s,
        .write_until = t0 + 100s,
        .last_progress = t0,
        .writes_in_flight = 8,
        .left_to_start = 3},
       DrainAction::kWait},
  };
  SpillPolicy policy({.drain_writes_in_flight = 8, .drain_stall_bound = 60s});
  for (const Row& r : rows) EXPECT_EQ(policy.NextDrainAction(r.state), r.action) << r.name;
}

}  // namespace
}  // namespace strata
