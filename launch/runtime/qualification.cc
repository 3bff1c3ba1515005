#include "launch/runtime/qualification.h"

namespace strata {

Qualification::Qualification(SyntheticRuntime& runtime, RecordListings listings, WaitIdle idle,
                             QualificationOptions options)
    : rt_(runtime), listings_(std::move(listings)), idle_(std::move(idle)), options_(options) {}

Status Qualification::SameFilesOnEveryRank(uint64_t* records) {
  STRATA_RETURN_IF_ERROR(rt_.WaitForStores());
  if (!listings_) {
    *records = 0;  // compared by whoever holds every rank's records
    return Status::Ok();
  }
  if (idle_ && !idle_()) return Status::Aborted("the store did not become idle");
  STRATA_ASSIGN_OR_RETURN(auto all, listings_());
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] != all[0]) {
      return Status::Corruption("rank " + std::to_string(r) + " holds " +
                                std::to_string(all[r].size()) + " record files, rank 0 holds " +
                                std::to_string(all[0].size()) + " (names or sizes differ)");
    }
  }
  *records = all.empty() ? 0 : all[0].size();
  return Status::Ok();
}

PhaseReport Qualification::Finish(PhaseReport r, const RuntimeStats& before,
                                  double seconds_before) {
  const RuntimeStats& now = rt_.stats();
  r.host_hits = now.host_hits - before.host_hits;
  r.gpu_hits = now.gpu_hits - before.gpu_hits;
  r.restored_bytes = now.restored_bytes - before.restored_bytes;
  const double s = now.restore_seconds - seconds_before;
  r.restore_gbps = s > 0 ? static_cast<double>(r.restored_bytes) / s / 1e9 : 0;
  if (now.mismatches != before.mismatches) {
    r.ok = false;
    r.detail = std::to_string(now.mismatches - before.mismatches) + " restored bytes differed";
    return r;
  }
  Status same = SameFilesOnEveryRank(&r.records);
  if (!same.ok()) {
    r.ok = false;
    r.detail = same.ToString();
  }
  return r;
}

PhaseReport Qualification::GpuHit() {
  PhaseReport r;
  r.name = "gpu-cache hit, no host hit";
  const RuntimeStats before = rt_.stats();
  r.ok = true;
  for (uint32_t i = 0; i < options_.conversations; ++i) {
    uint32_t c = rt_.NewConversation();
    conversations_.push_back(c);
    for (uint32_t t = 0; t < options_.turns && r.ok; ++t) {
      Result<TurnReport> turn =
          rt_.Turn(c, t == 0 ? options_.first_turn_tokens : options_.turn_tokens);
      if (!turn.ok()) {
        r.ok = false;
        r.detail = turn.status().ToString();
      } else if (t > 0 && (turn->host_hit || turn->gpu_reused_tokens == 0)) {
        r.ok = false;
        r.detail = "turn " + std::to_string(t) + " of conversation " + std::to_string(c) +
                   (turn->host_hit ? " restored from the host" : " found no GPU prefix");
      }
    }
    uint32_t b = rt_.Branch(c, options_.first_turn_tokens);
    conversations_.push_back(b);
    Result<TurnReport> turn = rt_.Turn(b, options_.turn_tokens);
    if (r.ok && (!turn.ok() || turn->host_hit || turn->gpu_reused_tokens == 0)) {
      r.ok = false;
      r.detail = "branch of conversation " + std::to_string(c) + " did not reuse the GPU prefix";
    }
  }
  r = Finish(std::move(r), before, before.restore_seconds);
  if (r.ok) r.detail = std::to_string(r.gpu_hits) + " GPU hits, 0 host hits";
  return r;
}

PhaseReport Qualification::HostRestore() {
  PhaseReport r;
  r.name = "host restore after GPU eviction";
  const RuntimeStats before = rt_.stats();
  rt_.EvictGpu();
  r.ok = true;
  for (uint32_t c : conversations_) {
    Result<TurnReport> turn = rt_.Turn(c, options_.turn_tokens);
    if (!turn.ok() || !turn->host_hit) {
      r.ok = false;
      r.detail = turn.ok() ? "conversation " + std::to_string(c) + " missed the host store"
                           : turn.status().ToString();
      break;
    }
  }
  r = Finish(std::move(r), before, before.restore_seconds);
  if (r.ok) r.detail = std::to_string(r.host_hits) + " host restores, every byte checked";
  return r;
}

PhaseReport Qualification::RestoreAfterRestart() {
  PhaseReport r;
  r.name = "restore after restarting every rank";
  const RuntimeStats before = rt_.stats();
  r.ok = true;
  // Replaying a conversation's first turn: the runtime's token streams are
  // deterministic, so the stored prefix is found on disk.
  for (uint32_t i = 0; i < options_.conversations && r.ok; ++i) {
    uint32_t c = rt_.NewConversation();
    Result<TurnReport> turn = rt_.Turn(c, options_.first_turn_tokens);
    if (!turn.ok() || !turn->host_hit) {
      r.ok = false;
      r.detail = turn.ok() ? "conversation " + std::to_string(c) + " missed the restarted store"
                           : turn.status().ToString();
    }
    rt_.Branch(c, options_.first_turn_tokens);  // keeps conversation ids aligned with phase 1
  }
  r = Finish(std::move(r), before, before.restore_seconds);
  if (r.ok) r.detail = std::to_string(r.host_hits) + " restores from disk, every byte checked";
  return r;
}

}  // namespace strata
