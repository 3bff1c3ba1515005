#include "coordinator/completion_gate.h"

#include <algorithm>
#include <utility>

namespace strata {

void CompletionGate::Expect(JobId id, const std::vector<RankId>& peers) {
  std::vector<RankId> awaited;
  for (RankId r : peers) {
    if (r.value != 0) awaited.push_back(r);
  }
  if (awaited.empty()) {
    awaited_.erase(id);
    return;
  }
  awaited_[id] = std::move(awaited);
}

bool CompletionGate::Settle(JobId id, RankId rank) {
  auto it = awaited_.find(id);
  if (it == awaited_.end()) return true;
  std::vector<RankId>& ranks = it->second;
  ranks.erase(std::remove(ranks.begin(), ranks.end(), rank), ranks.end());
  if (!ranks.empty()) return false;
  awaited_.erase(it);
  return true;
}

bool CompletionGate::Wakes(const wire::LinkEvent& event) {
  if (event.kind != wire::LinkEvent::Kind::kMessage) return true;
  // A fetch's JobData is always followed by its JobDone on the same link,
  // which wakes the owner for both.
  if (std::holds_alternative<wire::Heartbeat>(event.message) ||
      std::holds_alternative<wire::JobData>(event.message)) {
    return false;
  }
  const auto* done = std::get_if<wire::JobDone>(&event.message);
  if (done == nullptr) return true;
  auto link = rank_by_tag_.find(event.tag);
  if (link == rank_by_tag_.end() || link->second != done->rank) return true;
  auto job = awaited_.find(done->id);
  if (job == awaited_.end()) return true;
  std::vector<RankId>& ranks = job->second;
  auto at = std::find(ranks.begin(), ranks.end(), done->rank);
  if (at == ranks.end()) return true;
  ranks.erase(at);
  if (!ranks.empty()) return false;
  awaited_.erase(job);
  return true;
}

}  // namespace strata
