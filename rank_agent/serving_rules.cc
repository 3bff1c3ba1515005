#include "rank_agent/serving_rules.h"

#include <algorithm>

#include <string>
#include <utility>

namespace strata {

std::string_view JobAdmissionName(JobAdmission admission) {
  switch (admission) {
    case JobAdmission::kSubmitted: return "submitted";
    case JobAdmission::kHeld: return "held";
    case JobAdmission::kRefusedBusy: return "refused busy";
    case JobAdmission::kRefusedDraining: return "refused draining";
    case JobAdmission::kFailed: return "failed";
    case JobAdmission::kDuplicate: return "duplicate";
  }
  return "unknown";
}

std::string ServingRules::Name() const { return "rank " + std::to_string(rank_.value); }

wire::JobDone ServingRules::AnswerFor(const RecordJobDone& done) const {
  wire::JobDone answer;
  answer.id = done.id;
  answer.rank = rank_;
  answer.status = wire::FitForWire(done.status);
  answer.filesystem_full = done.fs_full && !done.status.ok();
  answer.bytes = done.bytes;
  return answer;
}

std::optional<Status> ServingRules::OnMessage(const wire::Message& message, JobRunner& runner,
                                              JobAnswers& answers) {
  if (ended_) return Status::FailedPrecondition(Name() + " received a message after its session");
  if (const auto* job = std::get_if<wire::Job>(&message)) {
    if (OnJob(job->record, runner, answers) == JobAdmission::kDuplicate) {
      return End(Status::FailedPrecondition("rank zero sent job " +
                                            std::to_string(job->record.id.value) + " while " +
                                            Name() + " still held or ran it"));
    }
    return std::nullopt;
  }
  if (std::holds_alternative<wire::Drain>(message)) {
    draining_ = true;
    return std::nullopt;
  }
  if (const auto* close = std::get_if<wire::Close>(&message)) {
    if (drained_) return End(Status::Ok());
    return End(
        Status::Unavailable("rank zero closed the session before draining: " + close->reason));
  }
  if (std::holds_alternative<wire::Heartbeat>(message)) return std::nullopt;
  return End(Status::FailedPrecondition("rank zero sent " +
                                        std::string(wire::MessageName(message)) + " while " +
                                        Name() + " was serving"));
}

Status ServingRules::OnLinkClosed(std::string_view why) {
  if (drained_) return End(Status::Ok());
  return End(Status::Unavailable("the record link to rank zero closed: " + std::string(why)));
}

Status ServingRules::OnOverflow() {
  return End(Status::FailedPrecondition("rank zero sent more messages than " + Name() + " queues"));
}

Status ServingRules::End(Status outcome) {
  ended_ = true;
  held_.clear();
  return outcome;
}

JobAdmission ServingRules::OnJob(const RecordJob& job, JobRunner& runner, JobAnswers& answers) {
  if (active_.count(job.id) != 0 ||
      std::any_of(held_.begin(), held_.end(), [&](const RecordJob& h) { return h.id == job.id; })) {
    return JobAdmission::kDuplicate;
  }
  if (draining_ || ended_) {
    const std::string why = draining_ ? " is draining" : " ended its session";
    answers.push_back(AnswerFor({job.id, Status::Aborted(Name() + why), false, 0}));
    return JobAdmission::kRefusedDraining;
  }
  if (!held_.empty()) {
    if (held_.size() >= held_jobs_max_) {
      answers.push_back(AnswerFor({job.id,
                                   Status::Busy(Name() + " holds " + std::to_string(held_.size()) +
                                                " jobs waiting for the transport"),
                                   false, 0}));
      return JobAdmission::kRefusedBusy;
    }
    held_.push_back(job);
    return JobAdmission::kHeld;
  }
  Status submitted = runner.Submit(job);
  if (submitted.code() == StatusCode::kBusy) {
    held_.push_back(job);
    return JobAdmission::kHeld;
  }
  if (!submitted.ok()) {
    answers.push_back(AnswerFor({job.id, std::move(submitted), false, 0}));
    return JobAdmission::kFailed;
  }
  active_.insert(job.id);
  return JobAdmission::kSubmitted;
}

void ServingRules::SubmitHeld(JobRunner& runner, JobAnswers& answers) {
  while (!held_.empty()) {
    Status submitted = runner.Submit(held_.front());
    if (submitted.code() == StatusCode::kBusy) return;
    const JobId id = held_.front().id;
    held_.pop_front();
    if (submitted.ok()) {
      active_.insert(id);
    } else {
      answers.push_back(AnswerFor({id, std::move(submitted), false, 0}));
    }
  }
}

void ServingRules::OnFinished(const RecordJobDone& done, JobAnswers& answers) {
  if (active_.erase(done.id) == 0 || ended_) return;
  answers.push_back(AnswerFor(done));
}

bool ServingRules::DrainDue() const {
  return draining_ && !drained_ && !ended_ && held_.empty() && active_.empty();
}

}  // namespace strata
