#include "tests/sim/planted_bug_rules.h"

#include <unordered_set>

namespace strata::sim {
namespace {

class AnswerBeforeFinished final : public ServingRules {
 public:
  using ServingRules::ServingRules;

  JobAdmission OnJob(const RecordJob& job, JobRunner& runner, JobAnswers& answers) override {
    const JobAdmission admission = ServingRules::OnJob(job, runner, answers);
    if (admission == JobAdmission::kSubmitted || admission == JobAdmission::kHeld) {
      answers.push_back(AnswerFor({job.id, Status::Ok(), false, 0}));
      answered_.insert(job.id);
    }
    return admission;
  }

  void OnFinished(const RecordJobDone& done, JobAnswers& answers) override {
    JobAnswers swallowed;
    ServingRules::OnFinished(done, answered_.erase(done.id) != 0 ? swallowed : answers);
  }

 private:
  std::unordered_set<JobId> answered_;  // answered before they finished
};

}  // namespace

std::string_view PlantedBugName(PlantedBug bug) {
  switch (bug) {
    case PlantedBug::kNone: return "none";
    case PlantedBug::kAnswerBeforeFinished: return "answer-before-finished";
  }
  return "unknown";
}

std::unique_ptr<ServingRules> MakeServingRules(PlantedBug bug, RankId rank, size_t held_jobs_max) {
  switch (bug) {
    case PlantedBug::kNone: break;
    case PlantedBug::kAnswerBeforeFinished:
      return std::make_unique<AnswerBeforeFinished>(rank, held_jobs_max);
  }
  return std::make_unique<ServingRules>(rank, held_jobs_max);
}

}  // namespace strata::sim
