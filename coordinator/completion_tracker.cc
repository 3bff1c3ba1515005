#include "coordinator/completion_tracker.h"

#include <string>

namespace strata {
namespace {

std::string JobName(JobId id) { return "job " + std::to_string(id.value); }

}  // namespace

Status CompletionTracker::Begin(JobId id, RecordJobKind kind, const std::vector<RankId>& ranks,
                                CompletionClock::time_point deadline) {
  if (jobs_.count(id) != 0) return Status::InvalidArgument(JobName(id) + " is already tracked");
  if (ranks.empty()) return Status::InvalidArgument(JobName(id) + " names no rank");
  Pending p;
  p.kind = kind;
  p.deadline = deadline;
  for (RankId r : ranks) {
    if (r.value >= world_size_) {
      return Status::InvalidArgument(JobName(id) + " names " + RankName(r) + " of world size " +
                                     std::to_string(world_size_));
    }
    if (!p.ranks.emplace(r, std::nullopt).second) {
      return Status::InvalidArgument(JobName(id) + " names " + RankName(r) + " twice");
    }
  }
  for (RankId r : ranks) ++waiting_[r.value];
  jobs_.emplace(id, std::move(p));
  return Status::Ok();
}

Result<std::optional<JobCompletion>> CompletionTracker::Report(JobId id, RankOutcome outcome) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) {
    return Status::FailedPrecondition(RankName(outcome.rank) + " reported " + JobName(id) +
                                      ", which is not outstanding");
  }
  Pending& p = it->second;
  auto slot = p.ranks.find(outcome.rank);
  if (slot == p.ranks.end()) {
    return Status::FailedPrecondition(RankName(outcome.rank) + " reported " + JobName(id) +
                                      ", which was not sent to it");
  }
  if (slot->second.has_value()) {
    return Status::FailedPrecondition(RankName(outcome.rank) + " reported " + JobName(id) +
                                      " twice");
  }
  if (!outcome.status.ok() && p.first_error.ok()) {
    p.first_error = outcome.status.WithContext(RankName(outcome.rank));
  }
  --waiting_[outcome.rank.value];
  p.fs_full |= outcome.fs_full;
  p.bytes += outcome.bytes;
  slot->second = std::move(outcome);
  if (++p.reported < p.ranks.size()) return std::optional<JobCompletion>();

  JobCompletion done;
  done.id = id;
  done.kind = p.kind;
  done.status = p.first_error;
  done.fs_full = p.fs_full;
  done.bytes = p.bytes;
  if (p.kind == RecordJobKind::kStore && !done.status.ok()) {
    for (const auto& [rank, o] : p.ranks) {
      if (o->status.ok()) done.wrote.push_back(rank);
    }
  }
  jobs_.erase(it);
  return std::optional<JobCompletion>(std::move(done));
}

std::vector<OverdueJob> CompletionTracker::Overdue(CompletionClock::time_point now) const {
  std::vector<OverdueJob> out;
  for (const auto& [id, p] : jobs_) {
    if (p.deadline > now) continue;
    OverdueJob o{id, p.kind, {}};
    for (const auto& [rank, reported] : p.ranks) {
      if (!reported) o.missing.push_back(rank);
    }
    out.push_back(std::move(o));
  }
  return out;
}

bool CompletionTracker::WaitsOn(RankId rank) const {
  return rank.value < world_size_ && waiting_[rank.value] > 0;
}

}  // namespace strata
