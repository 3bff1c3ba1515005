#include "launch/ops/ops_snapshot.h"

namespace strata {

void SnapshotPublisher::Publish(OpsSnapshot snapshot) {
  auto next = std::make_shared<const OpsSnapshot>(std::move(snapshot));
  MutexLock lock(mu_);
  latest_ = std::move(next);
}

std::shared_ptr<const OpsSnapshot> SnapshotPublisher::Latest() const {
  MutexLock lock(mu_);
  return latest_;
}

OpsSnapshot DrainFailedSnapshot(const OpsSnapshot* last, const Status& drain,
                                std::chrono::steady_clock::time_point now) {
  OpsSnapshot s = last != nullptr ? *last : OpsSnapshot{};
  s.drain_failure = drain.ToString();
  s.unhealthy_reason = "the drain at shutdown failed: " + s.drain_failure;
  s.taken_at = now;
  return s;
}

Health EvaluateHealth(const OpsSnapshot* snapshot, std::chrono::steady_clock::time_point now,
                      std::chrono::milliseconds stale_after) {
  if (snapshot == nullptr) return {.ok = false, .reason = "starting: no state published yet"};
  if (!snapshot->unhealthy_reason.empty())
    return {.ok = false, .reason = snapshot->unhealthy_reason};
  const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - snapshot->taken_at);
  if (age > stale_after) {
    return {.ok = false,
            .reason = "state is " + std::to_string(age.count()) + " ms old (limit " +
                      std::to_string(stale_after.count()) +
                      " ms): the owner thread stopped "
                      "publishing"};
  }
  return {.ok = true, .reason = "ok"};
}

}  // namespace strata
