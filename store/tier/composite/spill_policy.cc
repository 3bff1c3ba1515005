#include "store/tier/composite/spill_policy.h"

#include <unordered_set>

namespace strata {

bool SpillPolicy::WantsWriteBehind(const SlotRoom& room) const {
  return room.free + room.clean + room.writing < 2 * room.intake;
}

WriteBehindRound SpillPolicy::StartRound(const std::vector<ParkedRecord>& coldest_first,
                                         uint64_t now_ms) const {
  WriteBehindRound round(*this, now_ms);
  for (const ParkedRecord& r : coldest_first) {
    round.parked_[r.key] = {r.parked_parent, r.retry_at_ms, false};
    if (r.retry_at_ms <= now_ms) round.candidates_.push_back(r.key);
  }
  return round;
}

PrefixKey WriteBehindRound::RootOf(const PrefixKey& key) const {
  PrefixKey root = key;
  for (;;) {
    const std::optional<PrefixKey>& parent = parked_.at(root).parked_parent;
    if (!parent) return root;
    auto p = parked_.find(*parent);
    if (p == parked_.end() || p->second.started) return root;
    root = *parent;
  }
}

std::optional<PrefixKey> WriteBehindRound::Next(const SlotRoom& room) {
  while (next_ < candidates_.size() && policy_.WantsWriteBehind(room)) {
    const PrefixKey root = RootOf(candidates_[next_++]);  // a parked parent is written first
    const Model& m = parked_.at(root);
    if (!m.started && m.retry_at_ms <= now_ms_) return root;
  }
  return std::nullopt;
}

void WriteBehindRound::Report(const PrefixKey& key, SpillStart start) {
  Model& m = parked_.at(key);
  if (start == SpillStart::kStarted) {
    m.started = true;
  } else {
    m.retry_at_ms = policy_.RetryAt(now_ms_);
  }
}

std::vector<PrefixKey> SpillPolicy::DrainOrder(
    const std::vector<ParkedRecord>& most_recent_first) const {
  std::unordered_map<PrefixKey, const ParkedRecord*> parked;
  for (const ParkedRecord& r : most_recent_first) parked[r.key] = &r;
  std::vector<PrefixKey> order;
  std::unordered_set<PrefixKey> listed;
  std::vector<PrefixKey> path;
  for (const ParkedRecord& r : most_recent_first) {
    path.clear();
    for (const ParkedRecord* k = &r;;) {
      path.push_back(k->key);
      if (!k->parked_parent) break;
      auto p = parked.find(*k->parked_parent);
      if (p == parked.end()) break;
      k = p->second;
    }
    for (auto k = path.rbegin(); k != path.rend(); ++k) {  // required ancestors first
      if (listed.insert(*k).second) order.push_back(*k);
    }
  }
  return order;
}

DrainAction SpillPolicy::NextDrainAction(const DrainState& s) const {
  const bool may_start = s.now < s.write_until;
  if (may_start && s.left_to_start > 0 && s.writes_in_flight < options_.drain_writes_in_flight) {
    return DrainAction::kStart;
  }
  if (s.writes_in_flight == 0) return DrainAction::kFinish;
  if (s.now - s.last_progress > options_.drain_stall_bound) return DrainAction::kGiveUp;
  return DrainAction::kWait;
}

}  // namespace strata
