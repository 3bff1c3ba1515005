#include "tests/sim/sim_agent.h"

#include <algorithm>
#include <string>

namespace strata::sim {

bool SimAgent::InFlight(JobId id) const {
  return disk_.Running(id) ||
         std::any_of(held_.begin(), held_.end(), [&](const RecordJob& j) { return j.id == id; });
}

void SimAgent::ForEachInFlight(const std::function<void(const RecordJob&)>& fn) const {
  for (const RecordJob& j : held_) fn(j);
  for (const SimDiskJob& j : disk_.running()) fn(j.job);
}

void SimAgent::Reply(const RecordJobDone& done) {
  last_answered_ = done.id;
  net_.SendToZero(rank_, wire::JobDone{done.id, rank_, wire::FitForWire(done.status),
                                       done.fs_full && !done.status.ok(), done.bytes});
}

void SimAgent::Accept(const RecordJob& job) {
  if (held_.size() >= options_.held_max) {
    Reply({job.id, Status::Busy("rank " + std::to_string(rank_.value) + " holds too many jobs"),
           false, 0});
    return;
  }
  held_.push_back(job);
  if (options_.ack_early) {
    acked_.insert(job.id);
    Reply({job.id, Status::Ok(), false, 0});
  }
}

void SimAgent::SubmitHeld() {
  while (!held_.empty()) {
    const SimTime done_at = net_.now() + random_.Between(options_.disk_min, options_.disk_max);
    if (!disk_.Submit(held_.front(), done_at).ok()) return;  // busy: later
    held_.pop_front();
  }
}

Status SimAgent::Step(bool all) {
  if (crashed_) return Status::Ok();
  const bool lost = net_.PeerSideClosed(rank_);
  if (!lost && (all || !stalled())) {
    std::vector<wire::Message> in;
    Status s = net_.TakeForPeer(rank_, in);
    if (!s.ok()) return s;
    for (wire::Message& m : in) {
      if (auto* job = std::get_if<wire::Job>(&m)) {
        if (!draining_) Accept(job->record);
      } else if (std::holds_alternative<wire::Drain>(m)) {
        draining_ = true;
      }
    }
  }
  // A lost link, like a drain, finishes what was accepted.
  const bool finish_all = all || lost;
  for (;;) {
    SubmitHeld();
    std::vector<RecordJobDone> done;
    disk_.Finish(net_.now(), finish_all, done);
    for (const RecordJobDone& d : done) {
      if (acked_.erase(d.id) == 0) Reply(d);
    }
    if (!finish_all || held_.empty()) break;
  }
  if (draining_ && !drained_ && held_.empty() && disk_.running().empty()) {
    drained_ = true;
    net_.SendToZero(rank_, wire::Drained{Status::Ok()});
  }
  return Status::Ok();
}

void SimAgent::SendHostile() {
  const uint64_t kind = random_.Below(3);
  if (kind == 0 && last_answered_) {
    net_.SendToZero(rank_, wire::JobDone{*last_answered_, rank_, Status::Ok(), false, 0}, true);
  } else if (kind == 1) {
    const RankId other(rank_.value == 1 ? 2 : 1);
    net_.SendToZero(rank_, wire::JobDone{JobId(1), other, Status::Ok(), false, 0}, true);
  } else {
    net_.SendToZero(rank_, wire::HelloAccept{}, true);
  }
}

void SimAgent::Crash() {
  crashed_ = true;
  net_.Reset(rank_, "rank " + std::to_string(rank_.value) + " was killed");
  disk_.Crash(random_);
  held_.clear();
}

}  // namespace strata::sim
