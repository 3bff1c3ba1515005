#include "tests/sim/sim_agent.h"

#include <algorithm>
#include <string>

namespace strata::sim {

SimAgent::SimAgent(RankId rank, SimDisk& disk, SimNetwork& net, SimRandom& random,
                   SimAgentOptions options)
    : rank_(rank),
      disk_(disk),
      net_(net),
      random_(random),
      options_(options),
      rules_(MakeServingRules(options.planted_bug, rank, options.held_max)) {}

Status SimAgent::DiskRunner::Submit(const RecordJob& job) {
  SimAgent& a = agent_;
  const SimTime done_at =
      a.net_.now() + a.random_.Between(a.options_.disk_min, a.options_.disk_max);
  return a.disk_.Submit(job, done_at);
}

bool SimAgent::InFlight(JobId id) const {
  const std::deque<RecordJob>& held = rules_->held();
  return disk_.Running(id) ||
         std::any_of(held.begin(), held.end(), [&](const RecordJob& j) { return j.id == id; });
}

void SimAgent::ForEachInFlight(const std::function<void(const RecordJob&)>& fn) const {
  for (const RecordJob& j : rules_->held()) fn(j);
  for (const SimDiskJob& j : disk_.running()) fn(j.job);
}

void SimAgent::Send(JobAnswers& answers) {
  for (const wire::JobDone& done : answers) {
    last_answered_ = done.id;
    net_.SendToZero(rank_, done);
  }
  answers.clear();
}

void SimAgent::Ended(const Status& outcome) {
  if (outcome.ok() || net_.PeerSideClosed(rank_)) return;
  net_.SendToZero(rank_, wire::Close{wire::FitText(outcome.message())});
  net_.Reset(rank_, "rank " + std::to_string(rank_.value) + " ended its session");
}

Status SimAgent::Read(JobAnswers& answers) {
  std::vector<wire::Message> in;
  STRATA_RETURN_IF_ERROR(net_.TakeForPeer(rank_, in));
  for (const wire::Message& m : in) {
    std::optional<Status> ended = rules_->OnMessage(m, runner_, answers);
    Send(answers);
    if (ended) {
      Ended(*ended);
      break;
    }
  }
  return Status::Ok();
}

Status SimAgent::Step(bool all) {
  if (crashed_) return Status::Ok();
  JobAnswers answers;
  if (!rules_->ended() && net_.PeerSideClosed(rank_)) {
    Ended(rules_->OnLinkClosed("the simulated link closed"));
  }
  if (!rules_->ended() && (all || !stalled())) {
    STRATA_RETURN_IF_ERROR(Read(answers));
  }
  // A drain, like a session that ended, finishes what was accepted.
  const bool finish_all = all || rules_->ended();
  for (;;) {
    rules_->SubmitHeld(runner_, answers);
    std::vector<RecordJobDone> done;
    disk_.Finish(net_.now(), finish_all, done);
    for (const RecordJobDone& d : done) rules_->OnFinished(d, answers);
    Send(answers);
    if (!finish_all || rules_->held().empty()) break;
  }
  if (rules_->DrainDue()) {
    rules_->MarkDrained();
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
  (void)rules_->OnLinkClosed("the process was killed");  // drops the held jobs
}

}  // namespace strata::sim
